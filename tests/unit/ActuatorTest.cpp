// What a refused memory.reclaim (a symlink planted in the cgroup's place) says: the refusal in
// words, not an errno it never had.
#include <fcntl.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <future>
#include <memory>

#include "controller/shell/Io.h"
#include "controller/shell/PressureIo.h"
#include "controller/shell/Tracker.h"
#include "tests/unit/Fixture.h"
#include "tests/unit/Process.h"

namespace reclaimd::controller {
namespace {

using namespace std::chrono_literals;

TEST(Actuator, ASymlinkedMemoryReclaimIsRefusedAsWhatItIs) {
  testing::Fixture fx;
  fx.write("cg/app.slice/memory.stat", "active_file 0\ninactive_file 0\n");
  fx.write("elsewhere", "");
  std::filesystem::create_symlink(fx.path("elsewhere"), fx.path("cg/app.slice/memory.reclaim"));
  Tracker tracker(UniqueFd(::open(fx.path("cg").c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)));
  PressureIo pressure(fx.path("proc"));
  Paths paths;
  paths.procRoot = fx.path("proc");
  SystemActuator actuator(
      paths, &tracker, pressure, [] { return false; }, [] { return Capabilities{}; }, [](Events) {});
  auto w = actuator.reclaim(CgroupRef{"app.slice", 0}, 4096, cgroup::ReclaimFormat::Plain);
  EXPECT_EQ(w.status(), cgroup::ReclaimStatus::Failed);
  ASSERT_FALSE(w.result);
  EXPECT_EQ(w.result.error().errnoValue(), 0) << "no I/O error happened";
  EXPECT_NE(w.result.error().message().find("app.slice/memory.reclaim: a symlink"), std::string::npos)
      << w.result.error().message();
  EXPECT_EQ(fx.read("elsewhere"), "") << "nothing written through the link";
}

// A sync stuck on a dead filesystem never returns: a drop at every idle period must not start
// one more thread stuck beside it each time.
TEST(Actuator, ASyncStillRunningIsNotStartedAgain) {
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  auto started = std::make_shared<std::atomic<int>>(0);
  auto hanging = [released, started] {
    ++*started;
    released.wait();
  };
  EXPECT_FALSE(syncWithin(hanging, 10ms));
  EXPECT_FALSE(syncWithin(hanging, 10ms));
  release.set_value();
  // Once it has returned, the next drop syncs again.
  EXPECT_TRUE(testing::eventually([] { return syncWithin([] {}, 1s); }, 5s));
  // Counted only now: on a loaded machine the first thread may not have begun within the 10 ms.
  EXPECT_EQ(started->load(), 1) << "the second drop started a sync beside the stuck one";
}

}  // namespace
}  // namespace reclaimd::controller

// A cgroup without the memory controller (its parent does not enable it) is there, not gone:
// it is said once and left out until the next periodic walk, never walked for every turn. A
// target whose pressure file cannot be read is said too: its reclaim runs unguarded.
#include <fcntl.h>
#include <gtest/gtest.h>

#include "base/UniqueFd.h"
#include "cgroup/Cgroup.h"
#include "cgroup/Reclaim.h"
#include "tests/unit/EngineHarness.h"
#include "tests/unit/Fixture.h"

namespace reclaimd::testing {
namespace {

using namespace std::chrono_literals;

TEST(Unaccounted, AMissingMemoryStatInALiveCgroupIsNotGone) {
  Fixture fx;
  fx.write("cg/cgroup.controllers", "cpu memory\n");
  fx.write("cg/app.slice/cgroup.controllers", "cpu\n");  // no memory.stat: no memory controller
  fx.mkdir("cg/removed");                                // a removed cgroup's directory is empty
  UniqueFd root(::open(fx.path("cg").c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  auto app = cgroup::Cgroup::open(root.get(), "app.slice");
  ASSERT_TRUE(app.ok());
  auto stat = app->memoryStat();
  ASSERT_FALSE(stat.ok());
  EXPECT_FALSE(cgroup::cgroupGone(stat.error())) << stat.error().message();
  EXPECT_TRUE(cgroup::controllerMissing(stat.error())) << stat.error().message();
  EXPECT_NE(stat.error().message().find("app.slice: no memory.stat"), std::string::npos) << stat.error().message();
  auto removed = cgroup::Cgroup::open(root.get(), "removed");
  ASSERT_TRUE(removed.ok());
  auto gone = removed->memoryStat();
  ASSERT_FALSE(gone.ok());
  EXPECT_TRUE(cgroup::cgroupGone(gone.error()));
}

// Without the memory controller, "memory.stat" is a name like any other: a child cgroup may take
// it. The cgroup still has no memory controller, rather than a file that cannot be read.
TEST(Unaccounted, AChildCgroupNamedMemoryStatMeansNoMemoryController) {
  Fixture fx;
  fx.write("cg/cgroup.controllers", "cpu memory\n");
  fx.write("cg/app.slice/cgroup.controllers", "cpu\n");
  fx.mkdir("cg/app.slice/memory.stat");
  UniqueFd root(::open(fx.path("cg").c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  auto app = cgroup::Cgroup::open(root.get(), "app.slice");
  ASSERT_TRUE(app.ok());
  auto stat = app->memoryStat();
  ASSERT_FALSE(stat.ok());
  EXPECT_TRUE(cgroup::controllerMissing(stat.error())) << stat.error().message();
  EXPECT_NE(stat.error().message().find("app.slice: no memory.stat"), std::string::npos) << stat.error().message();
}

class UnaccountedEngineTest : public EngineHarness {};

TEST_F(UnaccountedEngineTest, ATargetWithoutTheControllerIsSaidOnceAndNotWalkedEveryTurn) {
  sim_.addCgroup("app.slice", 600 * kMiB);
  start("rules:\n  - match: app.slice\n    floor: 64M\n");
  run(3min);  // past the grace: the target is idle and measured every turn
  sim_.failReads("memory", EOPNOTSUPP, 1'000'000);
  const int walksBefore = sim_.walks;
  run(20s);
  EXPECT_LE(sim_.walks - walksBefore, 5) << "the periodic walks (every 5 s), not one per turn";
  EXPECT_EQ(count("cgroup_unaccounted"), 1u) << "said once, not at every walk";
  EXPECT_EQ(count("sample_skipped"), 0u);
}

// A target whose memory.pressure cannot be read reclaims without its own pressure guard: said.
TEST_F(UnaccountedEngineTest, ATargetsUnreadablePressureFileIsSaid) {
  sim_.addCgroup("app.slice", 600 * kMiB);
  sim_.feedAs = controller::PressureFeed::Off;
  start("rules:\n  - match: app.slice\n    floor: 64M\n");
  ASSERT_TRUE(runUntil([&] { return !steps().empty(); }, 3min));
  bool said = false;
  for (const Event& e : named("pressure_watch")) {
    if (e.field("cgroup") == std::optional<std::string>("app.slice")) {
      said = true;
      EXPECT_EQ(e.severity(), Severity::Warn) << e.text();
      EXPECT_EQ(*e.field("mode"), "off") << e.text();
    }
  }
  EXPECT_TRUE(said) << "no line said app.slice's pressure is not watched";
}

}  // namespace
}  // namespace reclaimd::testing

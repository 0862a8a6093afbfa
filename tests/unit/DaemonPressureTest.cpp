// End to end on a fixture tree: backoff and resume driven by a cgroup's pressure totals (a
// fixture cannot produce trigger events, so this is the polling path the daemon falls back to),
// and refault protection raising a floor.
#include <gtest/gtest.h>
#include <signal.h>

#include <thread>

#include "tests/unit/DaemonHarness.h"
#include "tests/unit/FakeMachine.h"
#include "tests/unit/Fixture.h"
#include "tests/unit/Process.h"

namespace reclaimd::testing {
namespace {

using namespace std::chrono_literals;

class DaemonPressureTest : public DaemonHarness {};

constexpr const char* kPolicy = R"(idle:
  grace: 1s
  interval: 1s
  sample_period: 100ms
reclaim:
  step_min: 16M
  step_max: 16M
pressure:
  stall: 100ms
  window: 1s
  calm: 2s
  min_step: 4M
rules:
  - match: build.slice
    idle_source: cgroup
    floor: 16M
)";

TEST_F(DaemonPressureTest, PressureHaltsReclaimUntilCalmThenHalvedSteps) {
  FakeMachine m(fx_);
  m.setBusy(30);
  m.addCgroup("build.slice", 4000);
  auto d = startWith(kPolicy);
  ASSERT_TRUE(waitLog("event=reclaim_step cgroup=build.slice")) << log();
  EXPECT_TRUE(logHas("event=pressure_watch scope=machine mode=polling")) << "fixtures cannot signal: polling";
  m.setCgroupStall("build.slice", 10'000);  // 50 % of the time stalled
  ASSERT_TRUE(waitLog("event=backoff scope=build.slice source=total")) << log();
  const std::size_t backoffAt = log().find("event=backoff scope=build.slice");
  EXPECT_TRUE(logHas("step_scale=0.5", backoffAt)) << log().substr(backoffAt, 300);
  // While the pressure lasts and for the calm period after it, no step for build.slice.
  std::this_thread::sleep_for(1500ms);
  m.setCgroupStall("build.slice", 0);
  // The fixture's cache does not shrink when asked, so the first step "freed nothing" and the
  // target waits for its cache to regrow by a chunk: regrow it.
  m.setCgroupFile("build.slice", 5000);
  ASSERT_TRUE(waitLog("event=resume scope=build.slice", backoffAt)) << log();
  const std::size_t resumeAt = log().find("event=resume scope=build.slice");
  EXPECT_EQ(count("event=reclaim_step cgroup=build.slice", backoffAt, resumeAt), 0u) << log().substr(backoffAt);
  EXPECT_TRUE(logHas("calm_s=2", resumeAt)) << log().substr(resumeAt, 200);
  // Reclaim resumes with the halved step: 8 MiB instead of 16.
  ASSERT_TRUE(waitLog("event=reclaim_step cgroup=build.slice", resumeAt)) << log().substr(resumeAt);
  EXPECT_TRUE(logHas("asked_mib=8.0", resumeAt)) << log().substr(resumeAt);
  d->signal(SIGTERM);
  EXPECT_EQ(d->wait(5s), 0);
}

TEST_F(DaemonPressureTest, RefaultJumpRaisesTheFloor) {
  FakeMachine m(fx_);
  m.setBusy(30);
  m.addCgroup("build.slice", 400);
  auto d = startWith(kPolicy);
  ASSERT_TRUE(waitLog("event=reclaim_step cgroup=build.slice")) << log();
  // After the step the files come back: 2,000 pages a second read in again.
  m.setCgroupFile("build.slice", 380);
  m.setCgroupRefaults("build.slice", 40);
  ASSERT_TRUE(waitLog("event=floor_raised cgroup=build.slice")) << log();
  const std::size_t raisedAt = log().find("event=floor_raised");
  EXPECT_TRUE(logHas("floor_mib=380.0", raisedAt)) << log().substr(raisedAt, 300);
  // With the floor at the cache, nothing more is asked of build.slice in this idle period.
  std::this_thread::sleep_for(1500ms);
  EXPECT_EQ(count("event=reclaim_step cgroup=build.slice", raisedAt, log().size()), 0u) << log().substr(raisedAt);
  d->signal(SIGTERM);
  EXPECT_EQ(d->wait(5s), 0);
}

}  // namespace
}  // namespace reclaimd::testing

// Pressure: the stall meter, backoff (halt, calm, halving and restoring), refault protection,
// and an event arriving during a step, which must halt it at the next chunk, with time from an
// injected clock.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include "controller/engine/Backoff.h"
#include "controller/engine/ReclaimStep.h"
#include "tests/unit/StepDriver.h"
#include "controller/engine/Refault.h"
#include "controller/engine/Scope.h"
#include "psi/Meter.h"
#include "psi/Watch.h"
#include "tests/unit/Fixture.h"

namespace reclaimd::controller {
namespace {

using namespace std::chrono_literals;
using reclaimd::testing::runStep;

TimePoint at(std::chrono::nanoseconds d) {
  return TimePoint{} + d;
}

TEST(Meter, StallOverTheWindow) {
  psi::Meter m(2s);
  EXPECT_EQ(m.stallOver(1s), 0us);
  m.add(at(0s), 1'000);
  m.add(at(500ms), 11'000);
  m.add(at(1000ms), 61'000);
  m.add(at(1500ms), 211'000);
  EXPECT_EQ(m.stallOver(1s), 200'000us) << "from the reading at 500 ms to the newest";
  EXPECT_EQ(m.stallOver(500ms), 150'000us);
  EXPECT_EQ(m.stallOver(10s), 210'000us) << "shorter history: since the oldest reading";
  psi::Meter sparse(2s);
  sparse.add(at(0s), 0);
  sparse.add(at(20s), 1'200'000);
  EXPECT_EQ(sparse.stallOver(1s), 60'000us) << "1.2 s of stall over 20 s is 60 ms per second, not 1.2 s in one";
  m.add(at(2s), 5);  // total went backwards: the cgroup is new
  EXPECT_EQ(m.stallOver(1s), 0us);
}

TEST(Backoff, HaltsAtOnceAndResumesAfterTheCalmPeriod) {
  Backoff b(BackoffConfig{10s, 1.0 / 64});
  EXPECT_FALSE(b.active());
  EXPECT_TRUE(b.pressure(at(100s))) << "the first report begins a backoff";
  EXPECT_TRUE(b.active());
  EXPECT_FALSE(b.pressure(at(104s))) << "more pressure while backed off only pushes the calm period back";
  EXPECT_FALSE(b.resume(at(113s))) << "calm counts from the last pressure (104 s)";
  EXPECT_TRUE(b.resume(at(114s)));
  EXPECT_FALSE(b.active());
  EXPECT_FALSE(b.resume(at(200s))) << "resumes once";
}

TEST(Backoff, StepHalvesPerConsecutiveBackoffAndDoublesBack) {
  Backoff b(BackoffConfig{1s, 1.0 / 8});
  EXPECT_DOUBLE_EQ(b.scale(), 1.0);
  b.pressure(at(0s));
  EXPECT_DOUBLE_EQ(b.scale(), 0.5);
  b.resume(at(2s));
  b.pressure(at(3s));  // no successful step in between: consecutive
  EXPECT_DOUBLE_EQ(b.scale(), 0.25);
  EXPECT_EQ(b.consecutive(), 2);
  b.resume(at(5s));
  b.pressure(at(6s));
  b.resume(at(8s));
  b.pressure(at(9s));
  EXPECT_DOUBLE_EQ(b.scale(), 0.125) << "down to the minimum, no further";
  b.resume(at(11s));
  b.stepSucceeded();
  EXPECT_DOUBLE_EQ(b.scale(), 0.25) << "restored gradually: doubled per successful step";
  EXPECT_EQ(b.consecutive(), 0);
  b.stepSucceeded();
  b.stepSucceeded();
  b.stepSucceeded();
  EXPECT_DOUBLE_EQ(b.scale(), 1.0) << "never above the policy's step";
}

TEST(Refault, JumpAfterAStepRaisesTheAlarm) {
  RefaultGuard g(RefaultConfig{10s, 256});
  // Before the step: 10 refaults per second.
  g.observe(at(0s), 1000);
  g.observe(at(1s), 1010);
  g.stepEnded(at(2s), 1020);
  EXPECT_TRUE(g.watching());
  EXPECT_FALSE(g.check(at(3s), 1030).has_value()) << "the usual rate is not a jump";
  auto jump = g.check(at(4s), 1320);  // 300 pages in 2 s where 20 were expected
  ASSERT_TRUE(jump.has_value());
  EXPECT_EQ(jump->excessPages, 280u);
  EXPECT_DOUBLE_EQ(jump->rateBefore, 10.0);
  EXPECT_FALSE(g.watching()) << "one alarm per step";
}

TEST(Refault, QuietWindowEndsTheWatch) {
  RefaultGuard g(RefaultConfig{5s, 256});
  g.stepEnded(at(0s), 0);
  EXPECT_FALSE(g.check(at(4s), 100).has_value());
  EXPECT_FALSE(g.check(at(6s), 200).has_value());
  EXPECT_FALSE(g.watching()) << "the window passed without a jump";
  EXPECT_FALSE(g.check(at(7s), 100000).has_value()) << "refaults long after a step are not its doing";
}

// A watch whose first reading comes 121 s after the step must not count every refault since the
// step against its 10 s window.
TEST(Refault, AReadingLongAfterTheWindowCountsOnlyTheWindowsShare) {
  RefaultGuard g(RefaultConfig{10s, 256});
  g.observe(at(0s), 1000);
  g.observe(at(1s), 1000);
  g.stepEnded(at(2s), 1000);
  // 1,000 pages over 121 s: about 83 of them in the window, under the limit (it fired before).
  EXPECT_FALSE(g.check(at(123s), 2000).has_value());
  EXPECT_FALSE(g.watching());
  g.stepEnded(at(200s), 2000);
  auto jump = g.check(at(321s), 2000 + 49000);  // the same gap, 4,050 pages the window's share
  ASSERT_TRUE(jump.has_value());
  EXPECT_NEAR(static_cast<double>(jump->excessPages), 49000.0 * 10 / 121, 1);
}

TEST(Refault, TheReadingThatCrossesTheWindowsEndIsJudgedOnItsShare) {
  RefaultGuard g(RefaultConfig{10s, 256});
  g.stepEnded(at(0s), 1000);
  EXPECT_FALSE(g.check(at(9s), 1100).has_value());
  auto jump = g.check(at(10500ms), 1600);  // 500 pages in 1.5 s, 1 s of it in the window: 333
  ASSERT_TRUE(jump.has_value());
  EXPECT_EQ(jump->excessPages, 433u);
}

// WSL's timing (a tick every 10 s, the default window 10 s): the reading a tick after the step
// lands just past the window and must still see the step's refaults.
TEST(Refault, ATickAsLongAsTheWindowStillSeesItsStepsRefaults) {
  RefaultGuard g(RefaultConfig{10s, 256});
  g.stepEnded(at(0s), 0);
  auto jump = g.check(at(10050ms), 600);
  ASSERT_TRUE(jump.has_value());
  EXPECT_NEAR(static_cast<double>(jump->excessPages), 600.0 * 10 / 10.05, 1);
}

TEST(Refault, ReadingsEveryTurnKeepTheWatchAcrossTheWindow) {
  RefaultGuard g(RefaultConfig{10s, 256});
  g.stepEnded(at(0s), 0);
  for (int s = 1; s <= 9; ++s) EXPECT_FALSE(g.check(at(std::chrono::seconds(s)), 0).has_value());
  EXPECT_TRUE(g.watching());
  EXPECT_TRUE(g.check(at(9500ms), 400).has_value()) << "a jump late in the window";
}

TEST(Refault, CounterResetIsANewCgroup) {
  RefaultGuard g;
  g.stepEnded(at(0s), 5000);
  EXPECT_FALSE(g.check(at(1s), 10).has_value());
  EXPECT_FALSE(g.watching());
}

// A clock the test moves by hand.
class ManualClock final : public Clock {
 public:
  TimePoint now() const override { return now_; }
  void advance(std::chrono::nanoseconds d) { now_ += d; }

 private:
  TimePoint now_{};
};

TEST(PressureEvent, HaltsAStepAtTheNextChunkWithinOneWindow) {
  policies::PressureSettings settings;
  settings.stall = 150ms;  // some 150 ms per 1 s window, whatever the default
  settings.window = 1s;
  Scope scope("build.slice", settings);

  ManualClock clock;
  std::optional<TimePoint> eventAt, haltAt;
  bool fired = false;  // the kernel's event, waiting to be taken between chunks
  int chunk = 0;
  // Each chunk takes 40 ms of (injected) time; the kernel signals pressure during chunk 3.
  std::uint64_t cache = 1 * kGiB;
  auto write = [&](std::uint64_t bytes) {
    clock.advance(40ms);
    cache -= bytes;
    if (++chunk == 3) {
      fired = true;
      eventAt = clock.now();
    }
    return cgroup::reclaimWritten(0, 40ms, "sim/memory.reclaim");
  };
  auto stop = [&] {
    if (std::exchange(fired, false) && scope.backoff().pressure(clock.now())) haltAt = clock.now();
    return scope.backoff().active();
  };
  StepOutcome s = runStep(
      StepLimits{1 * kGiB, 0, 16 * kMiB, 10s, 1.0}, [&] { return std::optional(cache); }, write, stop);
  EXPECT_EQ(s.end, StepEnd::Stopped);
  EXPECT_EQ(s.chunks, 3) << "no chunk is written after the event";
  ASSERT_TRUE(eventAt && haltAt);
  EXPECT_LE(*haltAt - *eventAt, std::chrono::nanoseconds(settings.window)) << "halted within one window";
  // Calm: pressure-free for settings.calm (30 s) before resuming.
  clock.advance(29s);
  EXPECT_FALSE(scope.backoff().resume(clock.now()));
  clock.advance(1s);
  EXPECT_TRUE(scope.backoff().resume(clock.now()));
  EXPECT_DOUBLE_EQ(scope.backoff().scale(), 0.5) << "the next steps are halved";
}

TEST(PsiWatch, FixtureFilesGetNoTriggerAndCannotBeWatched) {
  testing::Fixture fx;
  const std::string content = "some avg10=0.00 avg60=0.00 avg300=0.00 total=0\n";
  fx.write("memory.pressure", content);
  UniqueFd dir(::open(fx.root().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  psi::Source source = psi::Source::open(dir.get(), "memory.pressure", psi::TriggerSpec{});
  EXPECT_TRUE(source.readable().ok()) << "its totals are read";
  auto trigger = source.trigger();
  ASSERT_FALSE(trigger.ok()) << "no trigger on a file outside procfs and cgroup2";
  EXPECT_NE(trigger.error().message().find("not on procfs or cgroup2"), std::string::npos) << trigger.error().message();
  EXPECT_EQ(fx.read("memory.pressure"), content) << "the trigger text was not written into it";
  psi::Watch watch;
  auto added = watch.add(source, 1);
  ASSERT_FALSE(added.ok()) << "a source without a trigger is not watched";
  EXPECT_NE(added.error().message().find("not on procfs or cgroup2"), std::string::npos) << added.error().message();
}

TEST(Scope, TotalsCrossingTheThreshold) {
  testing::Fixture fx;
  auto write = [&](unsigned long long total) {
    fx.write("memory.pressure", "some avg10=0.00 avg60=0.00 avg300=0.00 total=" + std::to_string(total) +
                                    "\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n");
  };
  write(0);
  policies::PressureSettings settings;
  settings.stall = 150ms;  // 150 ms per 1 s, whatever the default
  settings.window = 1s;
  Scope scope("fixture", settings);
  UniqueFd dir(::open(fx.root().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  psi::Source source = psi::Source::open(dir.get(), "memory.pressure", psi::TriggerSpec{});
  auto sample = [&](TimePoint t) {
    auto total = source.someTotal();
    return scope.add(t, total ? *total : 0);
  };
  EXPECT_FALSE(sample(at(0s)));
  write(100'000);
  EXPECT_FALSE(sample(at(500ms))) << "100 ms of stall: under the threshold";
  write(160'000);
  EXPECT_TRUE(sample(at(1s))) << "160 ms within the last second";
  EXPECT_EQ(scope.lastStall(), 160'000us);
  write(170'000);
  EXPECT_FALSE(sample(at(2100ms))) << "10 ms in the last second";
  EXPECT_FALSE(scope.add(at(2200ms), 400'000, 400'000)) << "a stall that is all our own is not pressure";
}

}  // namespace
}  // namespace reclaimd::controller

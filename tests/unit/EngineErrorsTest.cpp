// Readings and writes that fail inside the engine: each failure is said, and its fate is the
// one the engine states (a skipped sample, a step ended), never a lost decision.
#include <gtest/gtest.h>

#include <utility>

#include "tests/unit/EngineHarness.h"

namespace reclaimd::testing {
namespace {

using namespace std::chrono_literals;
class EngineErrorsTest : public EngineHarness {
 protected:
  // A 600 MiB cgroup under a rule whose first chunk's measurement fails (EIO on memory.stat):
  // true once its first step has ended.
  bool firstChunkUnmeasured() {
    sim_.addCgroup("work", 600 * kMiB);
    start("rules:\n  - match: work\n    floor: 128M\n");
    failed_ = false;
    sim_.beforeWrite = [this](const std::string&, std::uint64_t) {
      if (!std::exchange(failed_, true)) sim_.failReads("memory", EIO, 1);  // the read after this chunk
    };
    return runUntil([&] { return count("reclaim_step") >= 1; }, 3min);
  }

 private:
  bool failed_ = false;
};

TEST_F(EngineErrorsTest, ABackoffEndsByTheClockWhileThePressureTotalCannotBeRead) {
  ASSERT_TRUE(twoStepsThenAStall());
  ASSERT_EQ(backoffs(), 1u);
  sim_.setMachineStall(0);
  sim_.failReads("pressure", EIO, 1'000'000);
  const std::size_t before = sim_.writes().size();
  ASSERT_TRUE(runUntil([&] { return !backedOff(); }, 60s)) << "the calm period runs out by the clock";
  run(5s);
  EXPECT_GT(sim_.writes().size(), before) << "steps go on after the resume";
  const auto skipped = named("sample_skipped");
  ASSERT_FALSE(skipped.empty()) << "the unreadable total is said";
  EXPECT_NE(skipped.front().field("error").value_or("").find("injected pressure"), std::string::npos)
      << skipped.front().text();
}

TEST_F(EngineErrorsTest, ATriggerWhoseTotalCannotBeReadIsTakenAsPressure) {
  sim_.addCgroup("work", 3000 * kMiB);
  start();
  ASSERT_TRUE(runUntil([&] { return !steps().empty(); }, 3min));
  sim_.failReads("pressure", EIO, 1'000'000);
  sim_.setMachineStall(0.5);
  sim_.pressureFires("");
  run(2s);
  EXPECT_EQ(backoffs(), 1u) << "the kernel's event stands: reclaimd's own stall cannot explain it";
  EXPECT_GE(count("sample_skipped"), 1u);
}

TEST_F(EngineErrorsTest, AnUnreadableRefaultCounterIsSaid) {
  sim_.addCgroup("work", 600 * kMiB);
  start();
  ASSERT_TRUE(runUntil([&] { return !steps().empty(); }, 3min));
  sim_.failReads("vmstat", EIO, 1'000'000);
  run(10s);
  const auto skipped = named("sample_skipped");
  ASSERT_FALSE(skipped.empty()) << "the root's refault check skipped, and said";
  EXPECT_NE(skipped.front().field("error").value_or("").find("injected vmstat"), std::string::npos)
      << skipped.front().text();
}

// The root's refault watch waits for /proc/vmstat: while it stays unreadable the watch ends by
// the clock, said once, instead of keeping the root measured on every tick for as long as the
// daemon runs.
TEST_F(EngineErrorsTest, ARefaultWatchWhoseCounterStaysUnreadableEndsByTheClock) {
  sim_.addCgroup("work", 600 * kMiB);
  start();
  ASSERT_TRUE(runUntil([&] { return !steps().empty(); }, 3min));
  ASSERT_TRUE(engine_->targets().front().watched()) << "the step's refaults are watched";
  sim_.failReads("vmstat", EIO, 1'000'000);
  run(60s);  // at the floor, the last watch's window long past
  EXPECT_FALSE(engine_->targets().front().watched());
  sim_.reads.clear();
  run(20s);
  EXPECT_LE(sim_.reads["meminfo"], 5) << "the cache is looked at every kRecheckAtFloor (5 s), not every tick";
  ASSERT_EQ(count("refault_wait_ended"), 1u);
  EXPECT_EQ(named("refault_wait_ended")[0].field("cgroup").value_or(""), "/");
}

// A probe's round still coming in when /proc/vmstat becomes unreadable: it ends after half a
// grace, and the probes go on instead of waiting on it.
TEST_F(EngineErrorsTest, AProbesRoundWhoseCounterStaysUnreadableEndsByTheClock) {
  ASSERT_TRUE(aProbeRoundComingIn()) << "a round's refaults coming in";
  sim_.failReads("vmstat", EIO, 1'000'000);
  const std::size_t from = sim_.writes().size();
  run(2min);
  EXPECT_GT(sim_.writes().size(), from) << "probes go on";
  EXPECT_FALSE(probeRoundComingIn()) << status().targets.at(0).trimWhy;
  ASSERT_EQ(count("refault_wait_ended"), 1u);
  EXPECT_EQ(named("refault_wait_ended")[0].field("wait").value_or(""), "probe round");
}

TEST_F(EngineErrorsTest, AFailedWriteSaysItsErrorWithTheFileItWroteTo) {
  sim_.addCgroup("work", 600 * kMiB);
  start("rules:\n  - match: work\n    floor: 128M\n");
  sim_.queueWriteStatus(cgroup::ReclaimStatus::Failed, EBUSY);
  ASSERT_TRUE(runUntil([&] { return !steps().empty(); }, 3min));
  ASSERT_FALSE(named("reclaim_step").empty()) << "the failed step is said";
  const Event step = named("reclaim_step").front();
  EXPECT_EQ(step.severity(), Severity::Error);
  EXPECT_EQ(step.field("status").value_or(""), "failed");
  EXPECT_EQ(step.field("errno").value_or(""), std::to_string(EBUSY));
  EXPECT_EQ(step.field("error").value_or(""), "write work/memory.reclaim: Device or resource busy") << step.text();
}

// A step freed a chunk before the kernel refused the next one (EBUSY): it did not free next to
// nothing, and its target is not paused until its cache regrows by a chunk (on a machine left idle
// it never would); the next steps take it to its floor.
TEST_F(EngineErrorsTest, AStepThatFreedBeforeAFailedChunkDoesNotPauseItsTarget) {
  sim_.addCgroup("work", 600 * kMiB);
  start("rules:\n  - match: work\n    floor: 128M\n");
  int written = 0;
  sim_.beforeWrite = [&](const std::string&, std::uint64_t) {
    if (++written == 2) sim_.queueWriteStatus(cgroup::ReclaimStatus::Failed, EBUSY);
  };
  ASSERT_TRUE(runUntil([&] { return count("reclaim_step") >= 1; }, 3min));
  const Event step = named("reclaim_step").front();
  ASSERT_EQ(step.field("status").value_or(""), "failed") << step.text();
  ASSERT_GT(mib(step.field("freed_mib").value_or("0")), 1.0) << step.text();
  run(1min);
  EXPECT_LE(sim_.subtreeFile("work"), 129 * kMiB);
}

// A signal interrupted the first chunk (EINTR) before it freed anything: the kernel did not run out
// of cache to take, and the target is not paused until its cache regrows by a chunk (on a machine
// left idle it never would); the next steps take it to its floor.
TEST_F(EngineErrorsTest, AnInterruptedStepDoesNotPauseItsTarget) {
  sim_.addCgroup("work", 600 * kMiB);
  start("rules:\n  - match: work\n    floor: 128M\n");
  sim_.queueWriteStatus(cgroup::ReclaimStatus::Interrupted, EINTR);
  ASSERT_TRUE(runUntil([&] { return count("reclaim_step") >= 1; }, 3min));
  const Event step = named("reclaim_step").front();
  ASSERT_EQ(step.field("status").value_or(""), "interrupted") << step.text();
  run(1min);
  EXPECT_LE(sim_.subtreeFile("work"), 129 * kMiB);
}

TEST_F(EngineErrorsTest, AChunkWhoseTargetCannotBeMeasuredEndsItsStepAndIsSaid) {
  ASSERT_TRUE(firstChunkUnmeasured());
  const Event step = named("reclaim_step").front();
  EXPECT_EQ(step.field("end").value_or(""), "unmeasured") << step.text();
  const auto skipped = named("sample_skipped");
  ASSERT_FALSE(skipped.empty()) << "the failed measurement is said";
  EXPECT_EQ(skipped.front().field("cgroup").value_or(""), "work");
  EXPECT_NE(skipped.front().field("error").value_or("").find("injected memory"), std::string::npos);
}

// What that step freed is unknown, not next to nothing: the target is not paused until its cache
// regrows by a chunk (on a machine left idle it never would), and the next steps take it to its floor.
TEST_F(EngineErrorsTest, AStepThatCouldNotBeMeasuredDoesNotPauseItsTarget) {
  ASSERT_TRUE(firstChunkUnmeasured());
  ASSERT_EQ(named("reclaim_step").front().field("end"), "unmeasured");
  run(1min);
  EXPECT_LE(sim_.subtreeFile("work"), 129 * kMiB);
}

// /proc/stat turns unreadable while the machine works: the detector is fed no more, and the moment
// it predicted the grace would end (were the machine quiet) passes. The turns go on at the sample
// period, not a millisecond apart for as long as the file stays unreadable.
TEST_F(EngineErrorsTest, AnUnreadableProcStatAfterWorkKeepsTheSamplePeriod) {
  sim_.addCgroup("work", 600 * kMiB);
  sim_.setMachineBusy(1.0);
  start();
  run(3min);
  sim_.setMachineBusy(0);
  sim_.failReads("cpu", EIO, 1'000'000);
  run(5min);  // past every prediction the detector made
  sim_.reads.clear();
  run(60s);
  EXPECT_LE(sim_.reads["cpu"], 101) << "every 0.6 s at most, as the last sample found the machine busy";
  EXPECT_GE(count("sample_skipped"), 1u) << "the unreadable file is said";
}

TEST_F(EngineErrorsTest, ADropWhoseCacheCannotBeReadIsSaidWithoutMadeUpFigures) {
  sim_.addCgroup("work", 1000 * kMiB);
  sim_.failReads("meminfo", EIO, 1'000'000);
  start("mode: dropcache\n");
  run(5min);
  ASSERT_EQ(drops(), 1u) << "the drop goes ahead";
  const auto drops = named("dropcache");
  ASSERT_EQ(drops.size(), 1u);
  EXPECT_FALSE(drops[0].field("freed_mib")) << drops[0].text();
  EXPECT_FALSE(drops[0].field("reclaimable_before_mib")) << drops[0].text();
  EXPECT_GE(count("sample_skipped"), 1u);
}

TEST_F(EngineErrorsTest, AnIdlePeriodWhoseCacheCannotBeReadStartsAndTheReadIsSaid) {
  sim_.addCgroup("work", 1000 * kMiB);
  start("mode: dropcache\n");
  ASSERT_TRUE(runUntil([&] { return count("held") >= 1; }, 1min)) << "warming up";
  sim_.failReads("meminfo", EIO, 1);  // the next read: idle_entered's
  ASSERT_TRUE(runUntil([&] { return count("idle_entered") >= 1; }, 5min));
  const Event entered = named("idle_entered").front();
  EXPECT_EQ(entered.field("reclaimable_mib").value_or(""), "?") << entered.text();
  const auto skipped = named("sample_skipped");
  ASSERT_FALSE(skipped.empty()) << "the failed read is said";
  EXPECT_NE(skipped.front().field("error").value_or("").find("injected meminfo"), std::string::npos)
      << skipped.front().text();
  EXPECT_EQ(drops(), 1u) << "the period went on to its drop";
}

TEST_F(EngineErrorsTest, AHeldLineWhoseCacheCannotBeReadGoesWithoutItAndTheReadIsSaid) {
  sim_.addCgroup("work", 1000 * kMiB);
  sim_.setMachineBusy(1.0);
  sim_.failReads("meminfo", EIO, 1'000'000);
  start("trim: {enabled: false}\n");
  ASSERT_TRUE(runUntil([&] { return count("held") >= 1; }, 3min));
  const Event held = named("held").front();
  EXPECT_FALSE(held.field("waiting_mib")) << held.text();
  EXPECT_TRUE(held.field("busy_pct")) << "the rest of the line stands: " << held.text();
  const auto skipped = named("sample_skipped");
  ASSERT_FALSE(skipped.empty()) << "the failed read is said";
  EXPECT_NE(skipped.front().field("error").value_or("").find("injected meminfo"), std::string::npos)
      << skipped.front().text();
}

}  // namespace
}  // namespace reclaimd::testing

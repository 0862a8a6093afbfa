// The daemon's scenarios, in process: the engine and the turn code over a simulated machine
// with a manual clock. Minutes of behaviour run in milliseconds.
#include <gtest/gtest.h>

#include "controller/operate/Status.h"
#include "policies/Step.h"
#include "tests/unit/EngineHarness.h"

namespace reclaimd::testing {
namespace {

using namespace std::chrono_literals;
using controller::kMachineScope;

class EngineTest : public EngineHarness {};

TEST_F(EngineTest, IdleMachineIsReclaimedInChunksToTheFloorRightAfterTheGrace) {
  sim_.addCgroup("work", 600 * kMiB);
  start();
  run(119s);
  EXPECT_TRUE(sim_.writes().empty()) << "nothing before the 2-minute grace (less its 0.6 s slack)";
  ASSERT_TRUE(runUntil([&] { return !sim_.writes().empty(); }, 5s));
  EXPECT_LE(elapsed(), 121s) << "reclaim starts within a second of the grace period's end";
  run(60s);
  for (const Write& w : sim_.writes())
    EXPECT_LE(w.bytes, 64 * kMiB) << "chunks of at most 64 MiB";
  EXPECT_NEAR(static_cast<double>(sim_.subtreeFile("")) / kMiB, 128.0, 1.0) << "down to the 128 MiB floor";
  EXPECT_GE(compactions(), 1u) << "free memory compacted for the host";
  EXPECT_EQ(status().idlePeriods, 1u);
}

TEST_F(EngineTest, ABusyMachineSaysWhyItHoldsTheCacheOnlyWhenTheAnswerChanges) {
  sim_.addCgroup("work", 600 * kMiB);
  sim_.setMachineBusy(0.2);  // 10 % of two CPUs
  start();
  run(10min);
  const auto held = named("held");
  ASSERT_EQ(held.size(), 2u) << "warm-up, then busy; nothing more while the answer stays";
  EXPECT_EQ(*held[0].field("state"), "warmup");
  EXPECT_NEAR(mib(*held[0].field("busy_pct")), 10, 0.5) << "the real busy share during warm-up, not 0";
  EXPECT_EQ(*held[1].field("state"), "busy");
  EXPECT_NEAR(mib(*held[1].field("waiting_mib")), 600 - 128, 1) << "cache waiting above the floor";
  EXPECT_TRUE(held[1].field("reclaim_in_s_if_quiet").has_value());
}

// Why is memory held: the cgroups that keep the machine busy, by their own CPU, in status and
// in the held line (which is said again when the cgroups named change).
TEST_F(EngineTest, TheCgroupsThatKeepTheMachineBusyAreNamed) {
  sim_.addCgroup("work", 600 * kMiB);
  sim_.addCgroup("bg.slice", 0);
  sim_.addCgroup("bg.slice/noise.service", 0);
  sim_.cgroup("bg.slice/noise.service").cpuShare = 0.04;  // 2 % of two CPUs
  sim_.cgroup("work").cpuShare = 0.01;
  sim_.setMachineBusy(0.05);
  start();
  run(5min);
  controller::Status s;
  engine_->fill(s, clock_.now(), 0, [](TimePoint) { return std::string(); });
  ASSERT_GE(s.busyCgroups.size(), 2u) << controller::formatStatus(s);
  EXPECT_EQ(s.busyCgroups[0].path, "bg.slice/noise.service") << "by its own CPU: its slice has none";
  EXPECT_NEAR(s.busyCgroups[0].busyPercent, 2.0, 0.1);
  EXPECT_EQ(s.busyCgroups[1].path, "work");
  EXPECT_NEAR(s.busyCgroups[1].busyPercent, 0.5, 0.1);
  EXPECT_NE(controller::formatStatus(s).find("kept busy by: bg.slice/noise.service 2.0%"), std::string::npos)
      << controller::formatStatus(s);
  const auto held = named("held");
  ASSERT_FALSE(held.empty());
  EXPECT_NE(held.back().field("busy_cgroups").value_or("").find("bg.slice/noise.service"), std::string::npos)
      << held.back().text();
}

TEST_F(EngineTest, ChunkLinesArePublishedWhileTheStepRuns) {
  sim_.addCgroup("work", 600 * kMiB);
  std::vector<std::size_t> chunksSaidBefore;  // at each write, the chunk lines already published
  sim_.beforeWrite = [&](const std::string&, std::uint64_t) {
    std::size_t n = 0;
    for (const Event& e : sim_.published)
      n += e.name() == "reclaim_chunk" ? 1 : 0;
    chunksSaidBefore.push_back(n);
  };
  start("reclaim: {chunk: 16M}\n");
  ASSERT_TRUE(runUntil([&] { return sim_.writes().size() >= 3; }, 3min));
  ASSERT_GE(chunksSaidBefore.size(), 3u);
  EXPECT_EQ(chunksSaidBefore[0], 0u);
  EXPECT_EQ(chunksSaidBefore[1], 1u) << "the first chunk's line is out before the second chunk";
  EXPECT_EQ(chunksSaidBefore[2], 2u);
}

// Idle entered -> pass -> backoff -> calm -> halved step -> doubled back, as one table: each
// row is what the machine does for a while and what the steps asked must be afterwards.
TEST_F(EngineTest, PressureBacksOffThenResumesWithAHalvedStepThatDoublesBack) {
  ASSERT_TRUE(twoStepsThenAStall());  // the machine stalls 50 % of the time and the trigger fires
  EXPECT_EQ(backoffs(), 1u);
  const std::size_t before = sim_.writes().size();
  sim_.setMachineStall(0);
  run(25s);
  EXPECT_EQ(sim_.writes().size(), before) << "nothing written during the calm period";
  const std::size_t resumed = steps().size();  // none since the backoff
  ASSERT_TRUE(runUntil([&] { return !backedOff(); }, 10s));
  run(5s);
  // The steps asked after the resume: halved once, then doubled back to the policy's step.
  const std::vector<Step> asked = steps();
  ASSERT_GE(asked.size(), resumed + 3);
  EXPECT_EQ(asked[resumed].bytes, 32 * kMiB);
  EXPECT_EQ(asked[resumed + 1].bytes, 64 * kMiB);
  EXPECT_EQ(asked[resumed + 2].bytes, 64 * kMiB);
}

TEST_F(EngineTest, OwnReclaimStallIsNotPressure) {
  sim_.addCgroup("work", 2000 * kMiB);
  sim_.setWriteTime(200ms);  // slow writes: reclaimd itself stalls
  start();
  ASSERT_TRUE(runUntil([&] { return !steps().empty(); }, 3min));
  sim_.pressureFires("");  // the stall PSI saw is (at most) reclaimd's own
  run(3s);
  EXPECT_EQ(backoffs(), 0u);
}

// On 6.1 a cgroup's backoff ended, and the machine's scope, read again only then, spread the
// stall of the workload long gone over its window and backed off instead of stepping again.
TEST_F(EngineTest, AfterACgroupsCalmPeriodStaleMachineStallIsNotPressure) {
  sim_.setMachineBusy(0.6);
  sim_.addCgroup("work.slice", 800 * kMiB);
  sim_.cgroup("work.slice").cpuShare = 0;
  start(
      "pressure: {stall: 100ms, window: 1s, calm: 10s}\nreclaim: {step_min: 16M, step_max: 16M}\n"
      "idle: {interval: 5s}\nrules:\n  - match: work.slice\n    idle_source: cgroup\n    floor: 16M\n    grace: 5s\n");
  ASSERT_TRUE(runUntil([&] { return steps().size() >= 3; }, 2min));
  // The workload stalls the cgroup; its trigger fires and it backs off.
  sim_.cgroup("work.slice").stallShare = 0.4;
  run(1s);
  sim_.pressureFires("work.slice");
  ASSERT_TRUE(runUntil([&] { return backoffs() >= 1; }, 5s));
  // While nothing is written the machine's stall grows (no event: its trigger is not asked
  // about here), then the workload ends.
  sim_.setMachineStall(0.4);
  run(5s);
  sim_.cgroup("work.slice").stallShare = 0;
  sim_.setMachineStall(0);
  const std::size_t before = steps().size();
  ASSERT_TRUE(runUntil([&] { return !backedOff(); }, 30s));
  EXPECT_TRUE(runUntil([&] { return steps().size() > before; }, 10s)) << "steps again after resuming";
  EXPECT_EQ(backoffs("machine"), 0u);
}

// The cgroup's stall is the machine's too: both scopes back off on one pressure, and the step
// after it is halved, not quartered (seen on 6.1 and 7.2: 4 MiB after one backoff of a 16 MiB step).
TEST_F(EngineTest, OnePressureSeenByTheCgroupAndTheMachineHalvesTheStepOnce) {
  sim_.setMachineBusy(0.6);
  sim_.addCgroup("work.slice", 800 * kMiB);
  start(
      "pressure: {stall: 100ms, window: 1s, calm: 10s, min_step: 2M}\nreclaim: {step_min: 16M, step_max: 16M}\n"
      "trim: {enabled: false}\nidle: {interval: 5s}\n"
      "rules:\n  - match: work.slice\n    idle_source: cgroup\n    floor: 16M\n    grace: 5s\n");
  ASSERT_TRUE(runUntil([&] { return steps().size() >= 3; }, 2min));
  sim_.cgroup("work.slice").stallShare = 0.4;
  sim_.setMachineStall(0.4);
  run(1s);
  sim_.pressureFires("work.slice");
  sim_.pressureFires("");
  ASSERT_TRUE(runUntil([&] { return backoffs() >= 2; }, 5s)) << "both scopes";
  EXPECT_EQ(backoffs("machine"), 1u);
  sim_.cgroup("work.slice").stallShare = 0;
  sim_.setMachineStall(0);
  const std::size_t before = steps().size();
  ASSERT_TRUE(runUntil([&] { return steps().size() > before; }, 1min));
  EXPECT_EQ(steps().back().bytes, 8 * kMiB) << "halved once";
}

TEST_F(EngineTest, RefaultsAfterAStepRaiseTheFloorAtOnceEvenWhenTheWorkIsBack) {
  sim_.addCgroup("work", 1000 * kMiB);
  start("reclaim: {step_min: 32M, step_max: 32M}\n");
  ASSERT_TRUE(runUntil([&] { return !steps().empty(); }, 3min));
  // The work comes back 3 s after the step: the machine is busy and reads its cache back.
  run(2s);
  sim_.setMachineBusy(1.0);
  sim_.cgroup("work").refaults += 128 * 256;  // 128 MiB of pages
  const auto at = clock_.now();
  ASSERT_TRUE(runUntil([&] { return status().floorRaises == 1; }, 3min));
  EXPECT_LE(clock_.now() - at, 2s) << "raised while the watch runs, not at the next idle period";
}

// workingset_refault_file counts the kernel's pages and the refault limit is bytes (1 MiB by
// default): 100 pages read back are 400 KiB with 4 KiB pages, 6.4 MiB with 64 KiB pages.
TEST_F(EngineTest, RefaultsUnderTheLimitInFourKiBPagesLeaveTheFloor) {
  sim_.addCgroup("work", 1000 * kMiB);
  start("reclaim: {step_min: 32M, step_max: 32M}\n");
  ASSERT_TRUE(runUntil([&] { return !steps().empty(); }, 3min));
  sim_.cgroup("work").refaults += 100;
  run(5s);
  EXPECT_EQ(status().floorRaises, 0u);
}

TEST_F(EngineTest, TheSameRefaultsInSixtyFourKiBPagesRaiseIt) {
  sim_.addCgroup("work", 1000 * kMiB);
  start("reclaim: {step_min: 32M, step_max: 32M}\n");
  Capabilities caps = fullCapabilities();
  caps.pageBytes = 64 << 10;
  engine_->setCapabilities(caps, "test");
  ASSERT_TRUE(runUntil([&] { return !steps().empty(); }, 3min));
  sim_.cgroup("work").refaults += 100;
  run(5s);
  EXPECT_EQ(status().floorRaises, 1u);
}

// The smallest limit (4 KiB) is less than one 64 KiB page: it is taken as one page, not none, so
// that a single page read back is within it and two are not.
TEST_F(EngineTest, TheSmallestRefaultLimitIsOnePageInSixtyFourKiBPages) {
  sim_.addCgroup("work", 1000 * kMiB);
  start("reclaim: {step_min: 32M, step_max: 32M}\npressure: {refault_limit: 4K}\n");
  Capabilities caps = fullCapabilities();
  caps.pageBytes = 64 << 10;
  engine_->setCapabilities(caps, "test");
  ASSERT_TRUE(runUntil([&] { return !steps().empty(); }, 3min));
  sim_.cgroup("work").refaults += 1;
  run(5s);
  EXPECT_EQ(status().floorRaises, 0u) << "one page is within the limit";
  const std::size_t before = steps().size();
  ASSERT_TRUE(runUntil([&] { return steps().size() > before; }, 1min));
  sim_.cgroup("work").refaults += 2;
  run(5s);
  EXPECT_EQ(status().floorRaises, 1u) << "two pages are over it";
}

TEST_F(EngineTest, ARaisedFloorSurvivesABurstThatOnlyBlocksTheInterval) {
  sim_.addCgroup("work", 1000 * kMiB);
  start("reclaim: {step_min: 32M, step_max: 32M}\n");
  ASSERT_TRUE(runUntil([&] { return !steps().empty(); }, 3min));
  sim_.cgroup("work").refaults += 64 * 256;
  ASSERT_TRUE(runUntil([&] { return status().floorRaises == 1; }, 5s));
  ASSERT_EQ(status().targets.size(), 1u);
  const double raised = static_cast<double>(status().targets[0].floorBytes) / kMiB;
  ASSERT_GT(raised, 128) << "the floor rose above the policy's";
  // A short burst: the current interval is busy, the 2-minute window stays quiet.
  sim_.setMachineBusy(0.5);
  run(1s);
  sim_.setMachineBusy(0);
  run(60s);
  EXPECT_EQ(status().idleState, "idle") << "the burst did not end the idle period";
  EXPECT_EQ(status().idlePeriods, 1u);
  EXPECT_GE(static_cast<double>(sim_.subtreeFile("")) / kMiB, raised - 1) << "the raised floor held";
}

// A burst in the current interval holds idle back after the window is quiet; idle_entered says
// for how long, so that a late start is told from a late daemon.
TEST_F(EngineTest, IdleEnteredSaysHowLongABurstInTheIntervalHeldItBack) {
  sim_.addCgroup("work", 1000 * kMiB);
  start();
  run(114s);
  sim_.setMachineBusy(0.5);  // 0.5 s of CPU: 2.5 % of the interval, 0.2 % of the window
  run(1s);
  sim_.setMachineBusy(0);
  ASSERT_TRUE(runUntil([&] { return count("idle_entered") == 1; }, 30s));
  const auto blocked = named("idle_entered")[0].field("blocked_s");
  ASSERT_TRUE(blocked.has_value());
  EXPECT_NEAR(std::stod(*blocked), 5, 1.01) << "from the window's end (120 s) until the burst left the interval";
}

TEST_F(EngineTest, IdleEnteredOnAQuietMachineWasHeldBackByNothing) {
  sim_.addCgroup("work", 1000 * kMiB);
  start();
  ASSERT_TRUE(runUntil([&] { return count("idle_entered") == 1; }, 3min));
  EXPECT_EQ(named("idle_entered")[0].field("blocked_s"), "0.000");
  EXPECT_FALSE(named("idle_entered")[0].field("since_work_s").has_value()) << "no work on record";
}

// After work, idle_entered says when the detector judged it to have ended: a start later than
// that plus the grace is the daemon's, not the machine's.
TEST_F(EngineTest, IdleEnteredSaysWhenTheWorkEnded) {
  sim_.addCgroup("work", 1000 * kMiB);
  start();
  sim_.setMachineBusy(1.0);
  run(5min);
  sim_.setMachineBusy(0);
  ASSERT_TRUE(runUntil([&] { return count("idle_entered") == 1; }, 3min));
  const auto since = named("idle_entered")[0].field("since_work_s");
  ASSERT_TRUE(since.has_value());
  EXPECT_NEAR(std::stod(*since), 120, 1.01) << "the grace runs from the work's end";
}

TEST_F(EngineTest, AStepThatFreedNothingPausesTheTargetUntilItsCacheRegrows) {
  sim_.addCgroup("work", 1000 * kMiB);
  sim_.setOvershoot(0);  // the kernel frees nothing (EAGAIN)
  start();
  ASSERT_TRUE(runUntil([&] { return !sim_.writes().empty(); }, 3min));
  const std::size_t writes = sim_.writes().size();
  run(30s);
  EXPECT_EQ(sim_.writes().size(), writes) << "no request every tick for what the kernel cannot give";
  sim_.setOvershoot(1);
  sim_.cgroup("work").file += 80 * kMiB;  // the cache regrows by more than a chunk
  EXPECT_TRUE(runUntil([&] { return sim_.writes().size() > writes; }, 10s));
}

// A cache within a chunk of 2^64 would wrap "stalled at + a chunk", and the target would be
// asked again every tick.
TEST_F(EngineTest, ACacheNearTwoToTheSixtyFourIsNotMistakenForRegrowth) {
  sim_.addCgroup("work", UINT64_MAX - 16 * kMiB);
  sim_.setOvershoot(0);
  start();
  ASSERT_TRUE(runUntil([&] { return !sim_.writes().empty(); }, 3min));
  const std::size_t writes = sim_.writes().size();
  run(30s);
  EXPECT_EQ(sim_.writes().size(), writes) << "paused until the cache regrows, which it cannot";
}

TEST_F(EngineTest, EinvalAfterAGoodProbeReprobesAndFallsBackToDropcache) {
  sim_.addCgroup("work", 1000 * kMiB);
  sim_.queueWriteStatus(cgroup::ReclaimStatus::Unsupported, EINVAL);
  start();
  ASSERT_TRUE(runUntil([&] { return !sim_.writes().empty(); }, 3min));
  run(2s);
  EXPECT_EQ(reprobes(), 1u);
  EXPECT_EQ(engine_->mode().mode, policies::Mode::DropCache);
  EXPECT_TRUE(engine_->mode().fellBack);
  const std::size_t writes = sim_.writes().size();
  run(30s);
  EXPECT_EQ(sim_.writes().size(), writes) << "the refused format is not sent again";
  EXPECT_EQ(drops(), 1u) << "dropcache takes over in the same idle period";
}

TEST_F(EngineTest, EinvalWithRulesStopsRatherThanDropCaches) {
  sim_.addCgroup("a", 1000 * kMiB);
  sim_.queueWriteStatus(cgroup::ReclaimStatus::Unsupported, EINVAL);
  start("rules:\n  - match: a\n    floor: 16M\n");
  ASSERT_TRUE(runUntil([&] { return !sim_.writes().empty(); }, 3min));
  run(30s);
  EXPECT_EQ(engine_->mode().mode, policies::Mode::Disabled);
  EXPECT_EQ(drops(), 0u) << "drop_caches would reach the cgroups rules protect";
  EXPECT_EQ(sim_.writes().size(), 1u);
}

TEST_F(EngineTest, DropcacheOncePerIdlePeriod) {
  sim_.addCgroup("work", 1000 * kMiB);
  start("mode: dropcache\n");
  run(10min);
  EXPECT_EQ(drops(), 1u);
  EXPECT_EQ(compactions(), 1u);
  sim_.setMachineBusy(1.0);
  run(1min);
  sim_.setMachineBusy(0);
  run(3min);
  EXPECT_EQ(drops(), 2u) << "once more in the next idle period";
}

TEST_F(EngineTest, DryRunWritesNothingAndCountsWhatItWouldReclaim) {
  sim_.addCgroup("work", 600 * kMiB);
  start("", true);
  run(5min);
  EXPECT_TRUE(sim_.writes().empty());
  EXPECT_EQ(compactions(), 0u);
  EXPECT_TRUE(reclaims().empty());
  ASSERT_GE(status().wouldSteps, 1u);
  ASSERT_FALSE(named("reclaim_step").empty()) << "the log says what it would do";
  EXPECT_EQ(*named("reclaim_step").front().field("dry_run"), "true");
  controller::Status s;
  engine_->fill(s, clock_.now(), 1e9, [](TimePoint) { return std::string("t"); });
  ASSERT_EQ(s.targets.size(), 1u);
  EXPECT_NE(s.targets[0].lastAction.find("would reclaim"), std::string::npos);
  EXPECT_GE(s.wouldSteps, 1u);
  EXPECT_EQ(s.wouldReclaimBytes, s.targets[0].wouldReclaimBytes);
  EXPECT_GT(s.wouldReclaimBytes, 0u);
  ASSERT_TRUE(s.lastActionTimestamp.has_value());
  EXPECT_LE(*s.lastActionTimestamp, 1e9);
}

TEST_F(EngineTest, AtTheFloorMostTicksReadProcStatAlone) {
  sim_.addCgroup("work", 600 * kMiB);
  start();
  ASSERT_TRUE(runUntil([&] { return !sim_.writes().empty(); }, 3min));
  run(60s);  // at the floor, refault watches over
  sim_.reads.clear();
  run(20s);
  EXPECT_GE(sim_.reads["cpu"], 19) << "a sample a second";
  EXPECT_LE(sim_.reads["meminfo"], 5) << "the cache is looked at every kRecheckAtFloor (5 s), not every tick";
  EXPECT_EQ(sim_.reads.count("memory") + sim_.reads.count("pressure") + sim_.reads.count("tree"), 0u)
      << ::testing::PrintToString(sim_.reads);
  // Cache that regrows at the floor is still found, within kRecheckAtFloor.
  sim_.cgroup("work").file += 100 * kMiB;
  const std::size_t writes = sim_.writes().size();
  EXPECT_TRUE(runUntil([&] { return sim_.writes().size() > writes; }, 6s));
}

// On a kernel that frees twice what it is asked (6.1 overshoots), the last megabytes above the
// floor are not worth a step: the target rests at the floor instead of a step that asks nothing
// being planned, said and measured every tick.
TEST_F(EngineTest, TheLastMegabytesAnOvershootingKernelWouldTakeUnderTheFloorAreLeft) {
  sim_.addCgroup("work", 600 * kMiB);
  sim_.setOvershoot(2.0);
  start();
  ASSERT_TRUE(runUntil([&] { return sim_.subtreeFile("") < 131 * kMiB; }, 5min));
  run(60s);
  const std::uint64_t others = sim_.subtreeFile("") - sim_.cgroup("work").file;
  sim_.cgroup("work").file = 128 * kMiB + 1700 * kKiB - others;  // 1.7 MiB above the floor
  const std::size_t steps = named("reclaim_step").size();
  sim_.reads.clear();
  run(60s);
  EXPECT_EQ(named("reclaim_step").size(), steps) << "no step that would ask nothing";
  EXPECT_LE(sim_.reads["meminfo"], 13) << "at rest: the cache looked at every kRecheckAtFloor (5 s)";
}

TEST_F(EngineTest, MalformedSamplesAreSkippedAndSaidOnceAMinute) {
  sim_.addCgroup("work", 600 * kMiB);
  start();
  sim_.failReads("cpu", EIO, 100);
  run(100s);
  EXPECT_EQ(count("sample_skipped"), 2u) << "the first, and one a minute later";
  EXPECT_TRUE(runUntil([&] { return !sim_.writes().empty(); }, 3min)) << "recovers when samples come back";
}

}  // namespace
}  // namespace reclaimd::testing

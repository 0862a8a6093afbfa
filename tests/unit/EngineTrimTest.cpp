// Trimming: cold cache returned from targets that never go idle, in small probes that
// refaults and pressure stop, without touching the grace period of a machine that goes idle.
#include <gtest/gtest.h>

#include <algorithm>

#include "tests/unit/EngineHarness.h"

namespace reclaimd::testing {
namespace {

using namespace std::chrono_literals;

class EngineTrimTest : public EngineHarness {
 protected:
  // The never-idle work runs in `work`, where its cache is: it is not quiet by its own CPU.
  EngineTrimTest() { sim_.chargeMachineTo("work"); }
  // The lowest cache `path`'s subtree is left with by any write, checked before each write.
  void watchLowest(const std::string& path) {
    sim_.beforeWrite = [this, path](const std::string& p, std::uint64_t) {
      if (p == path) lowestAsked_ = std::min(lowestAsked_, sim_.subtreeFile(path));
    };
  }
  // Dry runs write nothing: what they would trim is what they say.
  std::vector<Event> saidTrims() const {
    std::vector<Event> out;
    for (const Event& e : named("reclaim_step"))
      if (e.field("kind") == "trim") out.push_back(e);
    return out;
  }
  std::uint64_t lowestAsked_ = ~std::uint64_t{0};
};

TEST_F(EngineTrimTest, ABusyMachineIsTrimmedAfterItsGraceDownToTheFloorInMinutes) {
  sim_.addCgroup("work", 600 * kMiB);
  sim_.setMachineBusy(0.04);  // 2 % of two CPUs: an editor, an agent's CLI, Docker's engine
  start();
  run(2min);
  EXPECT_TRUE(sim_.writes().empty()) << "busy for less than a grace period: nothing";
  ASSERT_TRUE(runUntil([&] { return !sim_.writes().empty(); }, 15s)) << "probes start after the grace";
  watchLowest("");
  const TimePoint started = clock_.now();
  ASSERT_TRUE(runUntil([&] { return sim_.subtreeFile("") < 129 * kMiB; }, 5min)) << "cold cache goes in minutes";
  EXPECT_GE(clock_.now() - started, 1min) << "small probes for a whole clean stretch first";
  run(5min);
  const auto w = sim_.writes();
  ASSERT_GE(w.size(), 20u);
  for (std::size_t i = 1; i < w.size(); ++i)
    EXPECT_GE(w[i].at - w[i - 1].at, 6s) << "one probe per interval";
  // The first stretch's probes are 0.5 % of what lies above the floor (or 2 MiB); none is over
  // the chunk.
  EXPECT_NEAR(static_cast<double>(w[0].bytes) / kMiB, (600 - 128) / 200.0, 0.1);
  std::uint64_t largest = 0;
  for (const Write& x : w) largest = std::max(largest, x.bytes);
  EXPECT_LE(largest, 64 * kMiB);
  EXPECT_GE(largest, 32 * kMiB) << "clean probes grow";
  EXPECT_GE(std::min(lowestAsked_, sim_.subtreeFile("")), 128 * kMiB) << "never below the floor";
  EXPECT_EQ(status().idlePeriods, 0u) << "the machine itself never went idle";
  ASSERT_EQ(count("trim_started"), 1u);
  EXPECT_NEAR(mib(*named("trim_started")[0].field("busy_for_s")), 120, 1);
  ASSERT_FALSE(named("held").empty());
  EXPECT_EQ(named("held").back().field("trim"), "on") << "why memory is held says trimming goes on";
  const controller::Status st = status();
  EXPECT_EQ(st.trimProbes, w.size());
  EXPECT_NEAR(static_cast<double>(st.trimmedBytes) / kMiB, 600 - 128, 1) << "status and metrics count it";
  EXPECT_EQ(st.trimmedBytes, st.reclaimedBytes);
  // Compaction costs reclaimd's own CPU: after every 64 MiB probed, not after every probe.
  EXPECT_GE(compactions(), 4u);
  EXPECT_LE(compactions(), (600 - 128) / 64 + 1);
}

// Near the floor, on a kernel that frees twice what it is asked (6.1 overshoots), the last
// megabytes above the floor are not worth a request: no probe is planned that the step would
// cut to nothing, so nothing is counted or said every interval.
TEST_F(EngineTrimTest, NoProbeIsSentThatTheFloorLeavesNothingToAsk) {
  sim_.addCgroup("work", 600 * kMiB);
  sim_.setOvershoot(2.0);
  sim_.setMachineBusy(0.04);
  start();
  ASSERT_TRUE(runUntil([&] { return sim_.subtreeFile("") < 131 * kMiB; }, 10min));
  run(2min);
  sim_.cgroup("work").file = sim_.cgroup("work").file + 3 * kMiB / 2;  // floor + 1.5 MiB or so
  const auto probes = steps().size();
  run(5min);
  for (const controller::ReclaimChunk& c : reclaims()) {
    EXPECT_GT(c.bytes, 0u) << "a probe that asked nothing";
  }
  EXPECT_LE(steps().size(), probes + 1) << "at most the one probe that takes the regrown cache";
  EXPECT_EQ(status().trimProbes, steps().size()) << "every step a probe";
}

// Status says the probe the planner would send: none where the last megabytes above the floor are
// under what a probe asks at least, and why.
TEST_F(EngineTrimTest, StatusShowsNoProbeWhereThePlannerSendsNone) {
  sim_.addCgroup("work", 600 * kMiB);
  sim_.setMachineBusy(0.04);
  start();
  ASSERT_TRUE(runUntil([&] { return sim_.subtreeFile("") < 129 * kMiB; }, 10min));
  sim_.cgroup("work").file = 128 * kMiB + kMiB / 2;  // under the megabyte a probe asks at least
  const auto probes = steps().size();
  run(1min);
  ASSERT_EQ(steps().size(), probes) << "no probe sent";
  const controller::TargetStatus t = status().targets.at(0);
  EXPECT_EQ(t.trim, "probing");
  EXPECT_EQ(t.trimProbeBytes, 0u);
  EXPECT_NE(t.trimWhy.find("nothing above"), std::string::npos) << t.trimWhy;
}

// Heavy work (a build: here 30 % of two CPUs) is using its cache: no probe while it runs, however
// long. When it ends and the light load that never ends is left, probing goes on at once (the
// machine has been busy for longer than a grace).
TEST_F(EngineTrimTest, HeavyWorkIsNotProbedTheLightLoadAfterItIs) {
  sim_.addCgroup("work", 2000 * kMiB);
  sim_.setMachineBusy(0.6);
  start();
  run(10min);
  EXPECT_TRUE(sim_.writes().empty()) << "the work's own cache, read as it goes";
  const controller::Status st = status();
  ASSERT_EQ(st.targets.size(), 1u);
  EXPECT_EQ(st.targets[0].trim, "paused");
  EXPECT_NE(st.targets[0].trimWhy.find("work at 30.0% of the CPUs is using its cache"), std::string::npos)
      << st.targets[0].trimWhy;
  sim_.setMachineBusy(0.04);
  ASSERT_TRUE(runUntil([&] { return !sim_.writes().empty(); }, 30s)) << "light load: probes";
  EXPECT_NEAR(static_cast<double>(sim_.writes()[0].bytes) / kMiB, (2000 - 128) / 200.0, 0.1) << "0.5 % first";
}

// Waiting out heavy work is no clean stretch: the probes after it keep the size they had, and
// grow only after a stretch of their own with nothing read back.
TEST_F(EngineTrimTest, WaitingOutHeavyWorkDoesNotGrowTheProbes) {
  sim_.addCgroup("work", 2000 * kMiB);
  sim_.setMachineBusy(0.04);
  start();
  ASSERT_TRUE(runUntil([&] { return !sim_.writes().empty(); }, 3min));
  const std::uint64_t first = sim_.writes()[0].bytes;
  sim_.setMachineBusy(0.6);
  run(5min);
  const std::size_t before = sim_.writes().size();
  sim_.setMachineBusy(0.04);
  ASSERT_TRUE(runUntil([&] { return sim_.writes().size() >= before + 5; }, 2min));
  for (std::size_t i = before; i < before + 5; ++i)
    EXPECT_EQ(sim_.writes()[i].bytes, first) << "probe " << i - before << " after the heavy work";
}

// The kernel refuses every probe for minutes (EACCES: an LSM, a read-only mount): no probe took
// anything, so the step has not grown when the writes are taken again. Counted as clean probes, the
// refused ones doubled it to a chunk, and the first accepted probe took 64 MiB at once.
TEST_F(EngineTrimTest, RefusedProbesDoNotGrowTheStep) {
  sim_.addCgroup("work", 2000 * kMiB);
  sim_.setMachineBusy(0.04);
  start();
  ASSERT_TRUE(runUntil([&] { return !sim_.writes().empty(); }, 3min));
  const std::uint64_t first = sim_.writes()[0].bytes;
  for (int i = 0; i < 50; ++i)
    sim_.queueWriteStatus(cgroup::ReclaimStatus::Failed, EACCES);
  const std::size_t from = sim_.writes().size();
  ASSERT_TRUE(runUntil([&] { return sim_.writes().size() >= from + 50; }, 10min));
  ASSERT_TRUE(runUntil([&] { return sim_.writes().size() > from + 50; }, 1min));
  EXPECT_LE(sim_.writes()[from + 50].bytes, first) << "the first probe the kernel takes again";
}

// Probes grown on cold cache bring the machine to its floor, where it rests under a megabyte
// above it (no probe would ask that), then a rebuild reads 300 MiB of its own. The first probe
// after is the smallest step: a step grown on the cache that went would take a large piece of the
// rebuild's working set at once (64 MiB: 31 MiB read back within its rounds, 6.12).
TEST_F(EngineTrimTest, AtTheFloorTheStepStartsAgain) {
  sim_.addCgroup("work", 2000 * kMiB);
  sim_.setMachineBusy(0.04);
  start("trim:\n  min_step: 2MiB\n");
  ASSERT_TRUE(runUntil([&] { return !sim_.writes().empty(); }, 3min));
  const std::uint64_t first = sim_.writes()[0].bytes;
  ASSERT_TRUE(runUntil([&] { return sim_.writes().back().bytes >= 4 * first; }, 3min)) << "grown";
  ASSERT_TRUE(runUntil([&] { return sim_.subtreeFile("") < 129 * kMiB; }, 10min));
  sim_.cgroup("work").file = 128 * kMiB + kMiB / 2;  // under the megabyte a probe asks at least
  run(5min);
  const std::size_t before = sim_.writes().size();
  sim_.cgroup("work").file += 300 * kMiB;
  ASSERT_TRUE(runUntil([&] { return sim_.writes().size() > before; }, 1min));
  EXPECT_EQ(sim_.writes()[before].bytes, 2 * kMiB);
}

// A load that never ends is not always light: a reader of its hot set every second takes
// 12 % of a vCPU under TCG (15 % of two CPUs here). It is probed like the editor's 2 %.
TEST_F(EngineTrimTest, AModerateLoadThatNeverEndsIsProbed) {
  sim_.addCgroup("work", 600 * kMiB);
  sim_.setMachineBusy(0.3);
  start();
  ASSERT_TRUE(runUntil([&] { return !sim_.writes().empty(); }, 3min)) << "probes after the grace";
  ASSERT_TRUE(runUntil([&] { return sim_.subtreeFile("") < 129 * kMiB; }, 5min)) << "cold cache goes in minutes";
  const controller::Status st = status();
  ASSERT_EQ(st.targets.size(), 1u);
  EXPECT_EQ(st.targets[0].trim, "probing");
}

TEST_F(EngineTrimTest, ProbesKeepTheirIntervalBetweenSamples) {
  sim_.addCgroup("work", 600 * kMiB);
  sim_.setMachineBusy(0.04);
  start("idle: {sample_period: 1s}\ntrim: {interval: 500ms}\n");
  ASSERT_TRUE(runUntil([&] { return sim_.writes().size() >= 10; }, 3min));
  const auto& w = sim_.writes();
  for (std::size_t i = w.size() - 5; i < w.size(); ++i)
    EXPECT_LE(w[i].at - w[i - 1].at, 550ms) << "a wake for each probe, not the next sample (0.6 s while busy)";
}

// A refault once: the kernel is still learning what the work reads (an LRU gives up part of a
// hot set it has not yet seen read twice at first contact). Probing goes on, from the smallest
// step, with no hold.
TEST_F(EngineTrimTest, ARefaultOnceRestartsFromTheSmallestStepWithoutAHold) {
  sim_.addCgroup("work", 2000 * kMiB);
  sim_.setMachineBusy(0.04);
  start();
  ASSERT_TRUE(runUntil([&] { return sim_.writes().size() >= 40; }, 10min));
  ASSERT_GE(sim_.writes().back().bytes, 8 * kMiB) << "grown after a clean stretch";
  const std::size_t before = sim_.writes().size();
  sim_.cgroup("work").refaults += 2048;  // 8 MiB read back after the last probe
  ASSERT_TRUE(runUntil([&] { return status().targets.at(0).trimProbeBytes == 2 * kMiB; }, 10s))
      << "the next probe is the smallest again";
  const std::size_t after = sim_.writes().size();
  ASSERT_GE(after, before);
  ASSERT_TRUE(runUntil([&] { return sim_.writes().size() > after + 3; }, 1min)) << "no hold";
  const auto& w = sim_.writes();
  EXPECT_EQ(w[after].bytes, 2 * kMiB) << "the smallest step";
  EXPECT_EQ(status().trimHolds, 0u);
}

// A few MiB back after rounds of smallest probes (the edge of the work's cache, late pages of a
// read) are a trickle: the step stays and the clean stretch goes on, and status says so.
TEST_F(EngineTrimTest, ATrickleLeavesTheCleanStretchGoing) {
  sim_.addCgroup("work", 400 * kMiB);
  sim_.setMachineBusy(0.04);
  start();
  ASSERT_TRUE(runUntil([&] { return !sim_.writes().empty(); }, 5min));
  sim_.cgroup("work").refaults += 1024;  // 4 MiB: the first refault starts the rounds
  ASSERT_TRUE(runUntil([&] { return count("trim_refaulted") == 1; }, 20s));
  const TimePoint first = clock_.now();
  run(46s);
  sim_.cgroup("work").refaults += 384;  // 1.5 MiB of the round's 14-16
  ASSERT_TRUE(runUntil([&] { return count("trim_refaulted") == 2; }, 20s));
  const Event trickle = named("trim_refaulted").back();
  EXPECT_NE(trickle.field("reason")->find("under an eighth"), std::string::npos) << *trickle.field("reason");
  const std::string why = status().targets.at(0).trimWhy;
  EXPECT_NE(why.find("the step doubles once half a grace passes without more"), std::string::npos) << why;
  ASSERT_TRUE(runUntil([&] { return sim_.writes().back().bytes > 2 * kMiB; }, 2min));
  EXPECT_LT(clock_.now() - first, 80s) << "the stretch ran from the first refault, not the trickle (46 s later)";
  EXPECT_EQ(status().trimHolds, 0u);
}

TEST_F(EngineTrimTest, AUserWhoPausedKeepsAWarmCacheForTheWholeGrace) {
  sim_.addCgroup("work", 2000 * kMiB);
  sim_.setMachineBusy(0.2);
  start();
  run(5min);  // long enough to be trimmed
  ASSERT_GT(status().trimProbes, 0u);
  sim_.setMachineBusy(0);
  run(11s);  // the current interval (10 s) empties
  const std::size_t quiet = sim_.writes().size();
  // 10 % busy until the pause: the grace runs from the moment after which the work did no more
  // than one quiet interval's allowance (0.5 % of 10 s of two CPUs), 0.5 s before the pause.
  run(100s);
  EXPECT_EQ(sim_.writes().size(), quiet) << "no probe while the user only paused";
  ASSERT_TRUE(runUntil([&] { return sim_.writes().size() > quiet; }, 10s));
  EXPECT_EQ(status().idlePeriods, 1u) << "the next write is the idle period's";
}

TEST_F(EngineTrimTest, WorkShorterThanTheGraceIsNeverTrimmed) {
  sim_.addCgroup("work", 600 * kMiB);
  start();
  run(3min);  // warm-up, idle, reclaimed to the floor
  sim_.cgroup("work").file += 500 * kMiB;
  sim_.setMachineBusy(1.0);
  run(90s);  // a build
  sim_.setMachineBusy(0);
  const std::size_t before = sim_.writes().size();
  run(115s);
  EXPECT_EQ(sim_.writes().size(), before) << "nothing during the build nor the grace after it";
  EXPECT_EQ(status().trimProbes, 0u);
}

TEST_F(EngineTrimTest, PressureStopsProbes) {
  sim_.addCgroup("work", 2000 * kMiB);
  sim_.setMachineBusy(0.04);
  start("pressure: {calm: 60s}\n");
  ASSERT_TRUE(runUntil([&] { return status().trimProbes >= 2; }, 4min));
  stallTheMachine();
  ASSERT_EQ(backoffs(), 1u);
  const std::size_t before = sim_.writes().size();
  sim_.setMachineStall(0);
  run(55s);
  EXPECT_EQ(sim_.writes().size(), before) << "no probe during the calm period";
  EXPECT_TRUE(runUntil([&] { return sim_.writes().size() > before; }, 30s)) << "probes resume after it";
}

TEST_F(EngineTrimTest, OffABusyMachineIsNeverReclaimedAsInTheSeed) {
  sim_.addCgroup("work", 600 * kMiB);
  sim_.setMachineBusy(0.2);  // 10 % of two CPUs
  start("trim: {enabled: false}\n");
  run(10min);
  EXPECT_TRUE(sim_.writes().empty());
  sim_.setMachineBusy(0);
  EXPECT_TRUE(runUntil([&] { return !sim_.writes().empty(); }, 3min)) << "reclaimed once the work stops";
}

TEST_F(EngineTrimTest, ARuleTurnsItOffForItsCgroups) {
  sim_.setMachineBusy(0.6);
  sim_.addCgroup("db.slice", 400 * kMiB);
  sim_.addCgroup("app.slice", 400 * kMiB);
  sim_.cgroup("db.slice").cpuShare = 0.1;
  sim_.cgroup("app.slice").cpuShare = 0.1;
  start(
      "rules:\n  - match: db.slice\n    idle_source: cgroup\n    trim: false\n"
      "  - match: app.slice\n    idle_source: cgroup\n");
  run(6min);
  std::size_t db = 0, app = 0;
  for (const Write& w : sim_.writes()) {
    db += w.path == "db.slice" ? 1 : 0;
    app += w.path == "app.slice" ? 1 : 0;
  }
  EXPECT_EQ(db, 0u) << "trim: false";
  EXPECT_GT(app, 10u) << "its busy neighbour is trimmed, by its own CPU";
}

TEST_F(EngineTrimTest, ADryRunSaysWhatItWouldTrim) {
  sim_.addCgroup("work", 600 * kMiB);
  sim_.setMachineBusy(0.04);
  start("", true);
  run(4min);
  EXPECT_TRUE(sim_.writes().empty());
  EXPECT_GE(status().wouldSteps, 5u);
  const auto t = saidTrims();
  ASSERT_GE(t.size(), 5u);
  EXPECT_EQ(t[0].field("dry_run"), "true");
}

}  // namespace
}  // namespace reclaimd::testing

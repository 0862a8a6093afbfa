// Aimed probes: on a busy machine, the probes go to the cgroup whose work ended, not to a busy
// sibling's hot set, until that cgroup is at its floor; then back to the whole.
#include <gtest/gtest.h>

#include "tests/unit/EngineHarness.h"

namespace reclaimd::testing {
namespace {

using namespace std::chrono_literals;

class EngineAimTest : public EngineHarness {
 protected:
  void workEndsBesideABusySibling(bool units);
  void heavyWorkEnds(const std::string& policy, std::chrono::seconds busyFor);
  // heavyWorkEnds() with 600 MiB in "work" and 300 MiB in "bg", which no one reads again.
  void heavyWorkEndsBeside300MiB(const std::string& policy, std::chrono::seconds busyFor) {
    sim_.addCgroup("bg", 300 * kMiB);
    sim_.addCgroup("work", 600 * kMiB);
    heavyWorkEnds(policy, busyFor);
  }
  // Within two minutes, a probe went to "work".
  bool probesAimedAtWork() {
    return runUntil([&] { return writesTo("work") > 0; }, 2min);
  }
};

// Heavy work in a cgroup of its own ends; a background process beside it keeps the machine busy
// and reads its hot set. `units`: the policy's idle.units (a grace of 40 s: a scan every 10 s).
void EngineAimTest::workEndsBesideABusySibling(bool units) {
  sim_.addCgroup("bg", 160 * kMiB);  // first in the model's order: a probe of the root takes it first
  sim_.cgroup("bg").hot = 160 * kMiB;
  sim_.addCgroup("work", 600 * kMiB);
  heavyWorkEnds(std::string("idle:\n  grace: 40s\n  units: ") + (units ? "true" : "false") + "\n", 60s);
}

// "work" at half a CPU beside "bg" at 2 % of one, under `policy`, for `busyFor`; then the work ends.
void EngineAimTest::heavyWorkEnds(const std::string& policy, std::chrono::seconds busyFor) {
  sim_.cgroup("bg").cpuShare = 0.02;
  sim_.cgroup("work").cpuShare = 0.5;
  sim_.setMachineBusy(0.52);
  start(policy);
  run(busyFor);
  EXPECT_TRUE(sim_.writes().empty()) << "heavy work: no probe";
  sim_.cgroup("work").cpuShare = 0;
  sim_.setMachineBusy(0.02);
}

// The machine's probes go to the cgroup whose work ended, from the first scan that finds it quiet
// since the scan before, not to the sibling's hot set, until that cgroup is at its floor (a
// target of its own by then); then back to the whole, from the smallest step.
TEST_F(EngineAimTest, ProbesGoToTheCgroupWhoseWorkEndedNotToTheBusySiblingsHotSet) {
  workEndsBesideABusySibling(true);
  const TimePoint ended = clock_.now();
  ASSERT_TRUE(runUntil([&] { return count("trim_aimed") > 0; }, 2min));
  EXPECT_LE(clock_.now() - ended, 2 * 10s + 10s) << "within two scans and an interval of the work's end";
  const auto aimed = named("trim_aimed");
  EXPECT_EQ(*aimed[0].field("cgroup"), "/");
  EXPECT_EQ(*aimed[0].field("at"), "work");
  EXPECT_NE(status().targets.at(0).trimAim.find("work"), std::string::npos) << "status says where probes go";
  EXPECT_NE(status().targets.at(0).trimWhy.find("doubles each probe"), std::string::npos)
      << status().targets.at(0).trimWhy;
  const std::size_t from = sim_.writes().size();
  const std::uint64_t refaults = sim_.cgroup("bg").refaults;
  std::uint64_t largest = 0;
  ASSERT_TRUE(runUntil([&] { return sim_.subtreeFile("work") <= 17 * kMiB; }, 10min)) << "the work's cache went";
  const std::vector<Write> writes = writesSince(from);
  ASSERT_FALSE(writes.empty());
  for (const Write& w : writes) {
    EXPECT_EQ(w.path, "work") << "a write to " << w.path;
    largest = std::max(largest, w.bytes);
  }
  // No clean stretch to wait for (the cgroup has no reader of its own): they double from the first.
  ASSERT_GE(writes.size(), 3u);
  EXPECT_EQ(writes[1].bytes, 2 * writes[0].bytes);
  EXPECT_EQ(writes[2].bytes, 2 * writes[1].bytes);
  EXPECT_EQ(sim_.cgroup("bg").refaults, refaults) << "nothing more of the sibling's hot set was taken";
  EXPECT_GT(status().trimProbes, 0u) << "probes, not only the unit's steps";
  // At its floor (a unit now), the probes go back to the whole as at their start (trim.percent of
  // what lies above the floor, 0.5 % of ~650 MiB), not at the step they grew to on cold cache.
  EXPECT_GT(largest, 8 * kMiB);
  const std::size_t before = sim_.writes().size();
  ASSERT_TRUE(runUntil([&] { return sim_.writes().size() > before; }, 5min));
  EXPECT_EQ(sim_.writes().back().path, "");
  EXPECT_LE(sim_.writes().back().bytes, 4 * kMiB);
  ASSERT_FALSE(named("trim_unaimed").empty());
  // What the whole holds now is the sibling's hot set: the first probe that takes some of it
  // marks the bottom and holds, and no probe takes it again for half an hour.
  ASSERT_TRUE(runUntil([&] { return count("trim_held") > 0; }, 2min));
  const std::uint64_t atHold = sim_.cgroup("bg").refaults;
  EXPECT_LE(atHold - refaults, 2 * (4 * kMiB / 4096)) << "one or two probes' worth read back";
  run(25min);
  EXPECT_EQ(sim_.cgroup("bg").refaults, atHold);
}

// Aimed probes take a cgroup below the 32 MiB over its floor that it needed to be aimed at, before
// its grace: they go on to its floor, and then back to the whole as after a drained aim.
TEST_F(EngineAimTest, AnAimGoesOnToTheFloorBelowWhatItTookToBeAimedAt) {
  sim_.addCgroup("bg", 400 * kMiB);  // the machine stays far above its floor
  sim_.addCgroup("work", 80 * kMiB);
  heavyWorkEnds("idle:\n  grace: 2m\ntrim:\n  interval: 1s\n", 150s);
  ASSERT_TRUE(runUntil([&] { return count("trim_unaimed") > 0; }, 2min));
  EXPECT_EQ(*named("trim_unaimed")[0].field("reason"), "it is at its floor");
  EXPECT_LE(sim_.subtreeFile("work"), 17 * kMiB);
  EXPECT_EQ(status().unitsTaken, 0u) << "before its grace";
}

// The machine reaches its floor while the cgroup aimed at is still above its own: no probe goes
// anywhere, and status does not say that probes go there.
TEST_F(EngineAimTest, AtTheMachinesFloorStatusSaysNoProbeGoesToTheAim) {
  sim_.addCgroup("bg", 60 * kMiB);
  sim_.addCgroup("work", 100 * kMiB);  // 160 MiB in all: 32 over the machine's floor
  heavyWorkEnds("idle:\n  grace: 2m\ntrim:\n  interval: 1s\n", 150s);
  ASSERT_TRUE(runUntil([&] { return count("trim_aimed") > 0; }, 2min));
  ASSERT_TRUE(runUntil([&] { return fileMiB("") <= 129; }, 2min)) << "the machine at its floor";
  run(10s);
  EXPECT_TRUE(named("trim_unaimed").empty()) << "the aim stays for when the machine grows again";
  EXPECT_GT(fileMiB("work"), 40) << "the cgroup aimed at is above its own floor";
  const controller::TargetStatus t = status().targets.at(0);
  EXPECT_EQ(t.trim, "probing");
  EXPECT_EQ(t.trimProbeBytes, 0u);
  EXPECT_EQ(t.trimAim, "") << t.trimWhy;
}

// The cgroup aimed at holds pages a reader of its own re-reads every 20 s, one too light to count
// as work (the simulation charges it no CPU). The aimed probes take its cold cache and then,
// faster than the reads come back, those pages down to its floor: read back once, into the same
// cgroup. It is not aimed at again while it stays quiet (what it holds now came back from disk):
// aimed at each scan, the probes took them to the floor twice more, and 252 MiB came back in all.
TEST_F(EngineAimTest, ACgroupAnAimTookToItsFloorIsNotAimedAtAgainWhileQuiet) {
  sim_.addCgroup("bg", 300 * kMiB);
  sim_.addCgroup("work", 600 * kMiB);
  sim_.cgroup("work").hot = 100 * kMiB;
  sim_.cgroup("work").rereadEvery = 20s;
  heavyWorkEnds("idle:\n  grace: 2m\ntrim:\n  interval: 1s\n", 150s);
  ASSERT_TRUE(runUntil([&] { return count("trim_unaimed") > 0; }, 2min));
  EXPECT_EQ(*named("trim_unaimed")[0].field("reason"), "it is at its floor");
  run(20min);
  EXPECT_EQ(count("trim_aimed"), 1u);
  EXPECT_LE(sim_.cgroup("work").refaults * 4096, 100 * kMiB) << "read back once";
  EXPECT_NEAR(fileMiB("work"), 100, 1) << "what the busy cgroup reads stays";
}

// The cgroup aimed at holds cache the kernel does not give up (locked, under writeback): a probe
// there frees next to nothing, and the probes go back to the whole (its cold cache elsewhere is
// trimmed) and are not aimed at that cgroup again while it holds no more.
TEST_F(EngineAimTest, AnAimWhoseCacheDoesNotGoIsLeftForTheWhole) {
  sim_.addCgroup("bg", 300 * kMiB);  // busy, and cold: a probe of the root takes it
  sim_.addCgroup("work", 600 * kMiB);
  sim_.cgroup("work").pinned = 600 * kMiB;
  heavyWorkEnds("idle:\n  grace: 40s\n", 60s);
  ASSERT_TRUE(runUntil([&] { return count("trim_unaimed") > 0; }, 2min));
  EXPECT_NE(named("trim_unaimed")[0].field("reason")->find("freed next to nothing"), std::string::npos);
  EXPECT_EQ(sim_.subtreeFile("work"), 600 * kMiB);
  run(3min);
  EXPECT_EQ(count("trim_aimed"), 1u) << "not aimed at again while it holds no more";
  EXPECT_LT(sim_.subtreeFile("bg"), 200 * kMiB) << "the whole's cold cache is trimmed";
}

// The aimed cgroup's memory.reclaim refuses every write (EACCES: an LSM, a read-only mount) while the
// rest of the machine's cache shrinks by itself during each write (files deleted elsewhere). An aimed
// probe is measured on the target, so each refused write looks as if it freed megabytes; the refusal
// itself ends the aim, and the probes go back to the whole rather than fail at that cgroup every
// interval until its grace.
TEST_F(EngineAimTest, AWriteTheAimRefusesEndsTheAimWhateverTheWholeShrankMeanwhile) {
  heavyWorkEndsBeside300MiB("idle:\n  grace: 40s\n", 60s);
  ASSERT_TRUE(probesAimedAtWork());
  sim_.beforeWrite = [&](const std::string&, std::uint64_t) {
    SimCgroup& bg = sim_.cgroup("bg");
    bg.file -= std::min(bg.file, 4 * kMiB);
  };
  for (int i = 0; i < 20; ++i)
    sim_.queueWriteStatus(cgroup::ReclaimStatus::Failed, EACCES);
  ASSERT_TRUE(runUntil([&] { return count("trim_unaimed") > 0; }, 20s));
  EXPECT_NE(named("trim_unaimed")[0].field("reason")->find("Permission denied"), std::string::npos)
      << named("trim_unaimed")[0].text();
  run(20s);
  std::size_t refused = 0;
  for (const Event& e : named("reclaim_step"))
    refused += e.field("at") == "work" && e.field("status") == "failed" ? 1 : 0;
  EXPECT_EQ(refused, 1u) << "one refused write, not one every interval";
  EXPECT_EQ(count("trim_aimed"), 1u) << "not aimed at again while it holds no more";
}

// Every cgroup goes quiet: the background is aimed at once quiet since the scan before, then the
// machine goes idle and its idle steps take the whole. The aim ends there, and the log says so as it
// says every other end of an aim: a trim_aimed line is never left without its trim_unaimed.
TEST_F(EngineAimTest, AnAimEndsSaidWhenTheMachineGoesIdle) {
  heavyWorkEndsBeside300MiB("idle:\n  grace: 40s\n", 60s);
  ASSERT_TRUE(runUntil([&] { return count("trim_aimed") > 0; }, 2min));
  sim_.cgroup("bg").cpuShare = 0;
  sim_.setMachineBusy(0);
  ASSERT_TRUE(runUntil([&] { return count("idle_entered") > 0; }, 5min));
  run(10s);
  const auto aimed = named("trim_aimed");
  const auto unaimed = named("trim_unaimed");
  ASSERT_EQ(unaimed.size(), aimed.size());
  EXPECT_EQ(unaimed.back().field("at"), aimed.back().field("at"));
}

// A reload raises reclaim.cgroup_floor to just under what the cgroup aimed at holds: the next probes
// keep the new floor there, not the one the cgroup was aimed at under. The next scan says it only a
// quarter of a grace later; meanwhile the probes, doubling each one, took it to the old floor.
TEST_F(EngineAimTest, AReloadsCgroupFloorBindsTheAimAtOnce) {
  heavyWorkEndsBeside300MiB("idle:\n  grace: 2m\ntrim:\n  interval: 1s\n", 150s);
  ASSERT_TRUE(probesAimedAtWork());
  const std::uint64_t held = sim_.subtreeFile("work");
  policies::Policy raised = engine_->policy();
  raised.reclaim.cgroupFloor = held - 2 * kMiB;
  reload(raised);
  run(20s);
  EXPECT_GE(sim_.subtreeFile("work"), held - 2 * kMiB);
}

// A reload turns idle.units off while probes are aimed: from the reload on they go to the whole, as
// they would had the policy been so from the start, not to the cgroup until the next scan.
TEST_F(EngineAimTest, AReloadWithoutUnitsSendsTheProbesBackToTheWholeAtOnce) {
  heavyWorkEndsBeside300MiB("idle:\n  grace: 2m\ntrim:\n  interval: 1s\n", 150s);
  ASSERT_TRUE(probesAimedAtWork());
  policies::Policy off = engine_->policy();
  off.idle.units = false;
  reload(off);
  const std::size_t aimed = writesTo("work");
  run(20s);
  EXPECT_EQ(writesTo("work"), aimed);
  EXPECT_GT(writesTo(""), 0u);
  EXPECT_EQ(count("trim_unaimed"), 1u) << "the aim's end is said";
}

// The work ends before the machine has been busy for a grace: its cgroup is aimed at before trimming
// starts. The aimed probes double from the first all the same (the law started with the aim in place
// is an aimed one), not at the smallest step for a clean stretch as probes of the whole.
TEST_F(EngineAimTest, AnAimChosenBeforeTrimmingStartsDoublesFromTheFirstProbe) {
  heavyWorkEndsBeside300MiB("idle:\n  grace: 2m\n", 50s);
  ASSERT_TRUE(runUntil([&] { return count("trim_aimed") > 0; }, 2min));
  ASSERT_EQ(count("trim_started"), 0u) << "aimed before trimming starts";
  ASSERT_TRUE(runUntil([&] { return writesTo("work") >= 3; }, 3min));
  std::vector<std::uint64_t> bytes;
  for (const Write& w : sim_.writes())
    if (w.path == "work") bytes.push_back(w.bytes);
  EXPECT_EQ(bytes[1], 2 * bytes[0]);
  EXPECT_EQ(bytes[2], 2 * bytes[1]);
}

// A dry run aims as a run does, and its lines say where the probes would go: the cgroup aimed at, as
// a run's reclaim_step does, not the target as a whole.
TEST_F(EngineAimTest, ADryRunSaysWhereItsProbesWouldGo) {
  sim_.addCgroup("bg", 300 * kMiB);
  sim_.addCgroup("work", 600 * kMiB);
  sim_.cgroup("bg").cpuShare = 0.02;
  sim_.cgroup("work").cpuShare = 0.5;
  sim_.setMachineBusy(0.52);
  start("idle:\n  grace: 40s\n", true);
  run(60s);
  sim_.cgroup("work").cpuShare = 0;
  sim_.setMachineBusy(0.02);
  ASSERT_TRUE(runUntil([&] { return count("trim_aimed") > 0; }, 2min));
  const std::size_t before = named("reclaim_step").size();
  run(20s);
  const auto said = named("reclaim_step");
  ASSERT_GT(said.size(), before);
  for (std::size_t i = before; i < said.size(); ++i)
    EXPECT_EQ(said[i].field("at"), "work") << said[i].text();
  EXPECT_TRUE(sim_.writes().empty());
}

// The machine's meminfo cannot be read once, right after an aimed probe: the step ends unmeasured,
// what it freed unknown. That says nothing of the cgroup aimed at, which is not left as one whose
// cache does not go (not aimed at again until it held a chunk more): the next probes go on there.
TEST_F(EngineAimTest, AnAimedProbeThatCouldNotBeMeasuredKeepsTheAim) {
  heavyWorkEndsBeside300MiB("idle:\n  grace: 2m\ntrim:\n  interval: 1s\n", 150s);
  ASSERT_TRUE(probesAimedAtWork());
  bool once = false;
  sim_.beforeWrite = [&](const std::string&, std::uint64_t) {
    if (!std::exchange(once, true)) sim_.failReads("meminfo", EIO, 1);  // the read after this write
  };
  const std::size_t from = sim_.writes().size();
  run(5s);
  ASSERT_TRUE(once);
  EXPECT_EQ(count("trim_unaimed"), 0u) << named("trim_unaimed").front().text();
  const std::vector<Write> writes = writesSince(from);
  EXPECT_GE(writes.size(), 3u);
  for (const Write& w : writes)
    EXPECT_EQ(w.path, "work");
}

// An aimed probe meets EINVAL: the request's format, not the cgroup (the kernel no longer takes the
// swappiness key, and the probe after it says so: plain requests, no swap). That says nothing of the
// cgroup's cache; the probes go on at it in the format the probe found.
TEST_F(EngineAimTest, AnAimedProbesEinvalIsTheFormatsNotTheCgroups) {
  heavyWorkEndsBeside300MiB("idle:\n  grace: 2m\ntrim:\n  interval: 1s\n", 150s);
  ASSERT_TRUE(probesAimedAtWork());
  Capabilities caps = fullCapabilities();
  caps.swappinessKey = controller::KeySupport::Unsupported;
  sim_.setCapabilities(caps);
  sim_.queueWriteStatus(cgroup::ReclaimStatus::Unsupported, EINVAL);
  const std::size_t from = sim_.writes().size();
  run(10s);
  ASSERT_EQ(reprobes(), 1u);
  ASSERT_EQ(engine_->mode().mode, policies::Mode::Gradual);
  EXPECT_EQ(count("trim_unaimed"), 0u) << named("trim_unaimed").front().text();
  const std::vector<Write> writes = writesSince(from);
  EXPECT_GE(writes.size(), 3u);
  for (const Write& w : writes)
    EXPECT_EQ(w.path, "work");
}

// Without units the whole is probed: the sibling's hot set is taken with the cold cache (the
// model takes a probe of the root from the first cgroup first) and read back.
TEST_F(EngineAimTest, WithoutUnitsTheMachinesProbesReachTheBusySiblingsHotSet) {
  workEndsBesideABusySibling(false);
  run(3min);
  ASSERT_FALSE(sim_.writes().empty());
  for (const Write& w : sim_.writes())
    EXPECT_EQ(w.path, "");
  EXPECT_GT(sim_.cgroup("bg").refaults, 0u);
  EXPECT_TRUE(named("trim_aimed").empty());
}

}  // namespace
}  // namespace reclaimd::testing

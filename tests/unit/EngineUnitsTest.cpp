// Units (idle.units): without rules, a cgroup (a systemd unit or scope, a slice, a plain cgroup)
// whose own CPU stayed quiet for a grace period is reclaimed to its floor while another keeps
// the machine busy.
#include <gtest/gtest.h>

#include <algorithm>

#include "tests/unit/EngineHarness.h"

namespace reclaimd::testing {
namespace {

using namespace std::chrono_literals;

// Trimming off: what is written is the units' doing alone.
constexpr const char* kNoTrim = "trim:\n  enabled: false\n";

class EngineUnitsTest : public EngineHarness {
 protected:
  // An editor's service at 2 % of one CPU with a hot 160 MiB (more than the machine's 128 MiB
  // floor, so the scope's own floor is what binds), and a build's scope that read 600 MiB and
  // finished.
  void editorAndBuild() {
    editor(160 * kMiB);
    sim_.addCgroup("user.slice/build.scope", 600 * kMiB);
  }
  // user.slice/editor.service at 2 % of one CPU, keeping the machine busy, with `cache` it
  // keeps reading.
  void editor(std::uint64_t cache) {
    sim_.addCgroup("user.slice", 0);
    sim_.addCgroup("user.slice/editor.service", cache);
    sim_.cgroup("user.slice/editor.service").cpuShare = 0.02;
    sim_.cgroup("user.slice/editor.service").hot = cache;
    sim_.setMachineBusy(0.02);
  }
  // File cache of `path`'s subtree, MiB.
  double fileMiB(const std::string& path) const { return static_cast<double>(sim_.subtreeFile(path)) / kMiB; }
  void workBesideABusySibling(const std::string& path);
  void workEndsBesideABusySibling(bool units);
  void heavyWorkEnds(const std::string& policy, std::chrono::seconds busyFor);
  std::size_t writesTo(const std::string& path) const {
    return static_cast<std::size_t>(
        std::count_if(sim_.writes().begin(), sim_.writes().end(), [&](const Write& w) { return w.path == path; }));
  }
};

TEST_F(EngineUnitsTest, AFinishedBuildsScopeIsReclaimedToItsFloorWhileAnEditorKeepsTheMachineBusy) {
  editorAndBuild();
  start(kNoTrim);
  run(100s);
  EXPECT_TRUE(sim_.writes().empty()) << "quiet for less than a grace period: nothing";
  ASSERT_TRUE(runUntil([&] { return writesTo("user.slice/build.scope") > 0; }, 3min))
      << "the scope is reclaimed within a scan period after its grace";
  EXPECT_LE(elapsed(), 120s + 2 * controller::kBusyScanEvery);
  run(30s);
  EXPECT_NEAR(fileMiB("user.slice/build.scope"), 16, 1) << "down to reclaim.cgroup_floor";
  EXPECT_EQ(writesTo("user.slice/editor.service"), 0u) << "the busy unit keeps its cache";
  EXPECT_EQ(writesTo(""), 0u) << "the machine is busy: the root is not reclaimed as a whole";
  EXPECT_EQ(sim_.subtreeFile("user.slice/editor.service"), 160 * kMiB);
  const controller::Status st = status();
  EXPECT_EQ(st.idlePeriods, 0u);
  EXPECT_EQ(st.unitsTaken, 1u);
  for (const Step& s : steps())
    EXPECT_EQ(s.path, "user.slice/build.scope");
  EXPECT_EQ(st.trimProbes, 0u) << "idle steps, not probes";
  ASSERT_FALSE(named("unit_quiet").empty());
  EXPECT_NEAR(mib(*named("unit_quiet")[0].field("reclaimable_mib")), 600, 1) << "the line says what it takes";
  EXPECT_NEAR(static_cast<double>(st.unitReclaimedBytes) / kMiB, 600 - 16, 1) << "status and metrics count it";
  EXPECT_EQ(st.unitReclaimedBytes, st.reclaimedBytes);
  run(5min);
  EXPECT_EQ(status().unitsTaken, 1u) << "at its floor it is left alone: no step each scan";
  EXPECT_EQ(writesTo("user.slice/editor.service"), 0u);
}

// A machine without systemd (WSL): the work ran in one plain cgroup (or a slice), the
// background process that keeps the machine busy runs in a sibling. The work's cgroup is taken
// by itself, within a quarter of a grace's scans after its grace, and the sibling's hot set is
// never asked for.
void EngineUnitsTest::workBesideABusySibling(const std::string& path) {
  sim_.addCgroup("bg", 160 * kMiB);
  sim_.cgroup("bg").cpuShare = 0.02;
  sim_.cgroup("bg").hot = 160 * kMiB;
  sim_.setMachineBusy(0.02);
  sim_.addCgroup(path, 600 * kMiB);
  start("idle:\n  grace: 20s\n" + std::string(kNoTrim));
  ASSERT_TRUE(runUntil([&] { return writesTo(path) > 0; }, 2min)) << "taken as a target of its own";
  EXPECT_LE(elapsed(), 20s + 2 * 5s) << "scans every quarter of the grace";
  run(30s);
  EXPECT_NEAR(fileMiB(path), 16, 1);
  EXPECT_EQ(writesTo("bg"), 0u);
  EXPECT_EQ(writesTo(""), 0u);
  EXPECT_EQ(sim_.subtreeFile("bg"), 160 * kMiB);
}

TEST_F(EngineUnitsTest, APlainCgroupIsJudgedByItsOwnCpuToo) { workBesideABusySibling("work"); }

TEST_F(EngineUnitsTest, ASliceIsJudgedByItsOwnCpuToo) { workBesideABusySibling("build.slice"); }

TEST_F(EngineUnitsTest, TheMachineFloorStillBinds) {
  editor(32 * kMiB);
  sim_.addCgroup("user.slice/build.scope", 200 * kMiB);
  start(kNoTrim);
  run(6min);
  ASSERT_GT(writesTo("user.slice/build.scope"), 0u);
  EXPECT_NEAR(fileMiB(""), 128, 1) << "the scope's floor is 16 MiB, but the machine keeps 128 MiB in all";
}

// A quiet unit's step and the machine's probe in one pass (a probe every turn), on a kernel that
// frees more than it is asked (6.1): the step can leave the machine at its floor by itself, so
// the probe after it is sized from the machine as it is then, not as the pass planned it, and
// is not written at or under the machine's floor. (The probes went to the work's cgroup until it
// was taken: EngineAim.cpp; then to the whole from the pass of the unit's first step.)
TEST_F(EngineUnitsTest, AProbeAfterAUnitsStepInOnePassKeepsTheMachineFloor) {
  sim_.addCgroup("bg", 100 * kMiB);
  sim_.cgroup("bg").cpuShare = 0.02;
  sim_.setMachineBusy(0.02);
  sim_.addCgroup("work", 320 * kMiB);
  sim_.cgroup("work").cpuShare = 0.02;
  sim_.setOvershoot(1.1);
  std::vector<std::pair<std::string, double>> writes;  // each chunk's cgroup, and the machine's cache then (MiB)
  sim_.beforeWrite = [&](const std::string& path, std::uint64_t) { writes.emplace_back(path, fileMiB("")); };
  // Probes of 4 MiB or 1 %: large enough to be planned in the pass that takes the machine to its floor.
  start("idle:\n  grace: 20s\ntrim:\n  interval: 1s\n  min_step: 4M\n  percent: 1\n");
  run(5s);
  sim_.cgroup("work").cpuShare = 0;
  run(2min);
  ASSERT_EQ(status().unitsTaken, 1u) << "the work's cgroup is taken as a unit";
  ASSERT_EQ(count("trim_unaimed"), 1u) << "the probes, aimed at it until then, go back to the whole";
  for (const auto& [path, machineMiB] : writes) {
    if (path.empty()) {
      EXPECT_GT(machineMiB, 128.0) << "a probe of the machine at or under its 128 MiB floor";
    }
  }
  // The pass did plan the probe: it ended at the machine's floor without a chunk.
  const auto ended = named("reclaim_step");
  EXPECT_TRUE(std::any_of(ended.begin(), ended.end(), [](const Event& e) {
    return *e.field("cgroup") == "/" && *e.field("end") == "floor" && *e.field("chunks") == "0";
  })) << "the machine's probe after the unit's step ends at its floor without a chunk";
}

TEST_F(EngineUnitsTest, AUnitThatWorksAgainIsLeftAtOnce) {
  editorAndBuild();
  sim_.cgroup("user.slice/build.scope").file = 4000 * kMiB;  // many steps' worth
  sim_.beforeWrite = [&](const std::string& path, std::uint64_t) {
    if (path == "user.slice/build.scope") sim_.cgroup(path).cpuShare = 0.5;  // the next build starts
  };
  start(kNoTrim);
  ASSERT_TRUE(runUntil([&] { return writesTo("user.slice/build.scope") > 0; }, 5min));
  const std::size_t before = steps().size();
  run(2min);
  for (const controller::TargetStatus& t : status().targets) {
    EXPECT_NE(t.cgroup, "user.slice/build.scope") << "no longer a target";
  }
  EXPECT_LE(steps().size(), before + 1) << "at most the step under way ends";
  EXPECT_GT(sim_.subtreeFile("user.slice/build.scope"), 3000 * kMiB) << "the work keeps its cache";
}

// A reload raises reclaim.cgroup_floor while a quiet unit's steps take its cache: the unit keeps the
// new floor from the reload on, as a unit taken after it would, not the one it was taken under.
TEST_F(EngineUnitsTest, AReloadsCgroupFloorBindsTheUnitsAlreadyTaken) {
  editorAndBuild();
  sim_.cgroup("user.slice/build.scope").file = 4000 * kMiB;  // many steps' worth
  start(std::string(kNoTrim) + "reclaim:\n  step_max: 256M\n");
  ASSERT_TRUE(runUntil([&] { return writesTo("user.slice/build.scope") > 0; }, 5min));
  ASSERT_GT(fileMiB("user.slice/build.scope"), 3000);
  policies::Policy raised = engine_->policy();
  raised.reclaim.cgroupFloor = 3000 * kMiB;
  reload(raised);
  run(2min);
  EXPECT_GE(fileMiB("user.slice/build.scope"), 2999);
  for (const controller::TargetStatus& t : status().targets) {
    if (t.cgroup != "user.slice/build.scope") continue;
    EXPECT_EQ(t.floorBytes, 3000 * kMiB) << "status says the floor it keeps";
  }
}

TEST_F(EngineUnitsTest, AQuietUnitIsTakenWholeNotAppByApp) {
  editor(160 * kMiB);
  sim_.addCgroup("user.slice/user@1000.service", 0);
  sim_.addCgroup("user.slice/user@1000.service/app.slice", 0);
  sim_.addCgroup("user.slice/user@1000.service/app.slice/a.service", 300 * kMiB);
  sim_.addCgroup("user.slice/user@1000.service/app.slice/b.scope", 300 * kMiB);
  start(kNoTrim);
  run(5min);
  EXPECT_GT(writesTo("user.slice/user@1000.service"), 0u);
  EXPECT_EQ(writesTo("user.slice/user@1000.service/app.slice/a.service"), 0u);
  EXPECT_EQ(writesTo("user.slice/user@1000.service/app.slice/b.scope"), 0u);
  EXPECT_NEAR(fileMiB("user.slice/user@1000.service"), 16, 1);
}

TEST_F(EngineUnitsTest, InsideABusyUnitItsQuietUnitsAreTaken) {
  sim_.addCgroup("user.slice", 0);
  sim_.addCgroup("user.slice/user@1000.service", 0);
  sim_.addCgroup("user.slice/user@1000.service/app.slice", 0);
  sim_.addCgroup("user.slice/user@1000.service/app.slice/code.service", 0);
  sim_.cgroup("user.slice/user@1000.service/app.slice/code.service").cpuShare = 0.02;
  sim_.addCgroup("user.slice/user@1000.service/app.slice/build.scope", 300 * kMiB);
  sim_.setMachineBusy(0.02);
  start(kNoTrim);
  run(5min);
  EXPECT_EQ(writesTo("user.slice/user@1000.service"), 0u);
  EXPECT_GT(writesTo("user.slice/user@1000.service/app.slice/build.scope"), 0u);
}

TEST_F(EngineUnitsTest, SmallUnitsAreLeftToTheTargetAround) {
  sim_.addCgroup("system.slice", 0);
  sim_.addCgroup("system.slice/cron.service", 40 * kMiB);  // under floor + 32 MiB
  sim_.addCgroup("system.slice/busy.service", 0);
  sim_.cgroup("system.slice/busy.service").cpuShare = 0.02;
  sim_.setMachineBusy(0.02);
  start(kNoTrim);
  run(6min);
  EXPECT_TRUE(sim_.writes().empty());
  EXPECT_EQ(status().unitsTaken, 0u);
}

TEST_F(EngineUnitsTest, UnitsOffIsTheMachineWideJudgementAlone) {
  editorAndBuild();
  start(std::string(kNoTrim) + "idle:\n  units: false\n");
  run(6min);
  EXPECT_TRUE(sim_.writes().empty());
}

TEST_F(EngineUnitsTest, ARuleGoverningTheSubtreeDecidesThere) {
  editorAndBuild();
  start(std::string(kNoTrim) + "rules:\n  - match: user.slice\n    mode: disabled\n");
  run(6min);
  EXPECT_EQ(writesTo("user.slice/build.scope"), 0u) << "a disabled rule is the one promise rules make";
  EXPECT_EQ(status().unitsTaken, 0u);
}

// Trimming on, a rule disabling a subtree: no probe is aimed into it either, and nothing there is
// written to (a target's subtree holds no cgroup another rule governs: Decompose.h).
TEST_F(EngineUnitsTest, NoProbeIsAimedIntoASubtreeARuleDisables) {
  editorAndBuild();
  sim_.addCgroup("system.slice", 0);
  sim_.addCgroup("system.slice/busy.service", 100 * kMiB);
  sim_.cgroup("system.slice/busy.service").cpuShare = 0.02;
  start("rules:\n  - match: user.slice\n    mode: disabled\n");
  run(10min);
  ASSERT_GT(status().trimProbes, 0u) << "system.slice, busy, is trimmed";
  EXPECT_TRUE(named("trim_aimed").empty());
  for (const Write& w : sim_.writes())
    EXPECT_NE(w.path.rfind("user.slice", 0), 0u) << "a write to " << w.path;
  EXPECT_EQ(sim_.subtreeFile("user.slice/build.scope"), 600 * kMiB);
}

// With rules the tree is walked every 5 s: a unit taken in a subtree no rule governs stays a
// target across the walks until it is done (one unit_quiet, not one per scan).
TEST_F(EngineUnitsTest, BesideRulesAUnitStaysATargetAcrossTheWalks) {
  editorAndBuild();
  sim_.cgroup("user.slice/build.scope").file = 2000 * kMiB;  // several steps' worth
  sim_.addCgroup("kept.slice", 300 * kMiB);
  start(std::string(kNoTrim) + "rules:\n  - match: kept.slice\n    mode: disabled\n");
  run(6min);
  EXPECT_NEAR(fileMiB("user.slice/build.scope"), 16, 1);
  EXPECT_EQ(status().unitsTaken, 1u);
  EXPECT_GE(steps().size(), 4u);
  EXPECT_EQ(writesTo("kept.slice"), 0u);
  EXPECT_EQ(sim_.subtreeFile("kept.slice"), 300 * kMiB);
}

TEST_F(EngineUnitsTest, AnIdleMachineIsReclaimedAsAWholeNotUnitByUnit) {
  sim_.addCgroup("user.slice", 0);
  sim_.addCgroup("user.slice/build.scope", 600 * kMiB);
  sim_.setMachineBusy(0.02);  // the build's last 30 s
  sim_.cgroup("user.slice/build.scope").cpuShare = 0.02;
  start(kNoTrim);
  run(30s);
  sim_.setMachineBusy(0);  // nobody works: the machine goes idle after its grace
  sim_.cgroup("user.slice/build.scope").cpuShare = 0;
  run(4min);
  EXPECT_GT(status().idlePeriods, 0u);
  EXPECT_EQ(writesTo("user.slice/build.scope"), 0u);
  EXPECT_GT(writesTo(""), 0u);
  EXPECT_NEAR(fileMiB(""), 128, 1);
}

TEST_F(EngineUnitsTest, TrimmingTheRestGoesOnBesideTheUnits) {
  editorAndBuild();
  sim_.addCgroup("system.slice", 0);
  sim_.addCgroup("system.slice/leftover.slice", 400 * kMiB);
  start();
  run(15min);
  EXPECT_GT(writesTo("user.slice/build.scope"), 0u);
  // (The model takes a root probe's bytes from any cgroup, the scope's included: no LRU order.)
  EXPECT_LE(sim_.subtreeFile("user.slice/build.scope"), 17 * kMiB);
  EXPECT_GT(writesTo(""), 0u) << "the root is trimmed";
  EXPECT_LT(sim_.subtreeFile("system.slice"), 200 * kMiB);
  EXPECT_GE(sim_.subtreeFile("user.slice/editor.service"), 160 * kMiB) << "the editor's hot set stays";
}

// Heavy work in a cgroup of its own ends; a background process beside it keeps the machine busy
// and reads its hot set. `units`: the policy's idle.units (a grace of 40 s: a scan every 10 s).
void EngineUnitsTest::workEndsBesideABusySibling(bool units) {
  sim_.addCgroup("bg", 160 * kMiB);  // first in the model's order: a probe of the root takes it first
  sim_.cgroup("bg").hot = 160 * kMiB;
  sim_.addCgroup("work", 600 * kMiB);
  heavyWorkEnds(std::string("idle:\n  grace: 40s\n  units: ") + (units ? "true" : "false") + "\n", 60s);
}

// "work" at half a CPU beside "bg" at 2 % of one, under `policy`, for `busyFor`; then the work ends.
void EngineUnitsTest::heavyWorkEnds(const std::string& policy, std::chrono::seconds busyFor) {
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
TEST_F(EngineUnitsTest, ProbesGoToTheCgroupWhoseWorkEndedNotToTheBusySiblingsHotSet) {
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
TEST_F(EngineUnitsTest, AnAimGoesOnToTheFloorBelowWhatItTookToBeAimedAt) {
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
TEST_F(EngineUnitsTest, AtTheMachinesFloorStatusSaysNoProbeGoesToTheAim) {
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
TEST_F(EngineUnitsTest, ACgroupAnAimTookToItsFloorIsNotAimedAtAgainWhileQuiet) {
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
TEST_F(EngineUnitsTest, AnAimWhoseCacheDoesNotGoIsLeftForTheWhole) {
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
TEST_F(EngineUnitsTest, AWriteTheAimRefusesEndsTheAimWhateverTheWholeShrankMeanwhile) {
  sim_.addCgroup("bg", 300 * kMiB);
  sim_.addCgroup("work", 600 * kMiB);
  heavyWorkEnds("idle:\n  grace: 40s\n", 60s);
  ASSERT_TRUE(runUntil([&] { return writesTo("work") > 0; }, 2min)) << "probes aimed at the cgroup";
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
TEST_F(EngineUnitsTest, AnAimEndsSaidWhenTheMachineGoesIdle) {
  sim_.addCgroup("bg", 300 * kMiB);
  sim_.addCgroup("work", 600 * kMiB);
  heavyWorkEnds("idle:\n  grace: 40s\n", 60s);
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
TEST_F(EngineUnitsTest, AReloadsCgroupFloorBindsTheAimAtOnce) {
  sim_.addCgroup("bg", 300 * kMiB);
  sim_.addCgroup("work", 600 * kMiB);
  heavyWorkEnds("idle:\n  grace: 2m\ntrim:\n  interval: 1s\n", 150s);
  ASSERT_TRUE(runUntil([&] { return writesTo("work") > 0; }, 2min)) << "probes aimed at the cgroup";
  const std::uint64_t held = sim_.subtreeFile("work");
  policies::Policy raised = engine_->policy();
  raised.reclaim.cgroupFloor = held - 2 * kMiB;
  reload(raised);
  run(20s);
  EXPECT_GE(sim_.subtreeFile("work"), held - 2 * kMiB);
}

// A reload turns idle.units off while probes are aimed: from the reload on they go to the whole, as
// they would had the policy been so from the start, not to the cgroup until the next scan.
TEST_F(EngineUnitsTest, AReloadWithoutUnitsSendsTheProbesBackToTheWholeAtOnce) {
  sim_.addCgroup("bg", 300 * kMiB);
  sim_.addCgroup("work", 600 * kMiB);
  heavyWorkEnds("idle:\n  grace: 2m\ntrim:\n  interval: 1s\n", 150s);
  ASSERT_TRUE(runUntil([&] { return writesTo("work") > 0; }, 2min)) << "probes aimed at the cgroup";
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
TEST_F(EngineUnitsTest, AnAimChosenBeforeTrimmingStartsDoublesFromTheFirstProbe) {
  sim_.addCgroup("bg", 300 * kMiB);
  sim_.addCgroup("work", 600 * kMiB);
  heavyWorkEnds("idle:\n  grace: 2m\n", 50s);
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
TEST_F(EngineUnitsTest, ADryRunSaysWhereItsProbesWouldGo) {
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
TEST_F(EngineUnitsTest, AnAimedProbeThatCouldNotBeMeasuredKeepsTheAim) {
  sim_.addCgroup("bg", 300 * kMiB);
  sim_.addCgroup("work", 600 * kMiB);
  heavyWorkEnds("idle:\n  grace: 2m\ntrim:\n  interval: 1s\n", 150s);
  ASSERT_TRUE(runUntil([&] { return writesTo("work") > 0; }, 2min)) << "probes aimed at the cgroup";
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
TEST_F(EngineUnitsTest, AnAimedProbesEinvalIsTheFormatsNotTheCgroups) {
  sim_.addCgroup("bg", 300 * kMiB);
  sim_.addCgroup("work", 600 * kMiB);
  heavyWorkEnds("idle:\n  grace: 2m\ntrim:\n  interval: 1s\n", 150s);
  ASSERT_TRUE(runUntil([&] { return writesTo("work") > 0; }, 2min)) << "probes aimed at the cgroup";
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
TEST_F(EngineUnitsTest, WithoutUnitsTheMachinesProbesReachTheBusySiblingsHotSet) {
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

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
  void workBesideABusySibling(const std::string& path);
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

}  // namespace
}  // namespace reclaimd::testing

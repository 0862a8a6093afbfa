// Per-cgroup rules in the engine's scenarios: cgroups judged by their own CPU, protection,
// cgroups coming and going, reloads.
#include <gtest/gtest.h>

#include <map>

#include "tests/unit/EngineHarness.h"

namespace reclaimd::testing {
namespace {

using namespace std::chrono_literals;

constexpr const char* kBuildEditorUserRules = R"(rules:
  - match: build.slice
    idle_source: cgroup
    floor: 32M
  - match: editor.slice
    idle_source: cgroup
  - match: user.slice/**
    mode: disabled
)";

class EngineRulesTest : public EngineHarness {};

TEST_F(EngineRulesTest, AnIdleCgroupIsReclaimedWhileAnotherAndTheMachineAreBusy) {
  sim_.setMachineBusy(0.6);  // machine-wide idleness never comes
  sim_.addCgroup("build.slice", 400 * kMiB);
  sim_.addCgroup("editor.slice", 200 * kMiB);
  sim_.addCgroup("user.slice", 300 * kMiB);
  sim_.addCgroup("user.slice/session-1.scope", 300 * kMiB);
  sim_.cgroup("editor.slice").cpuShare = 0.1;  // a language server ticking
  start(kBuildEditorUserRules);
  ASSERT_TRUE(runUntil([&] { return writesTo("build.slice") > 0; }, 3min));
  EXPECT_LE(elapsed(), 121s) << "after build.slice's own 2-minute grace";
  run(2min);
  EXPECT_NEAR(static_cast<double>(sim_.subtreeFile("build.slice")) / kMiB, 32, 1) << "down to its rule's floor";
  // Busy by its own CPU: never an idle step, only probes of its cold cache (the 4 MiB minimum
  // first, never more than a quarter of what lies above its floor), one per 6 s at most.
  bool first = true;
  for (const Step& s : steps("editor.slice")) {
    EXPECT_LE(static_cast<double>(s.bytes) / kMiB, first ? 4.0 : (200.0 - 16) / 4) << "first: " << first;
    first = false;
  }
  for (const controller::TargetStatus& t : status().targets) {
    if (t.cgroup != "editor.slice") continue;
    EXPECT_GT(t.reclaimedBytes, 0u);
    EXPECT_EQ(t.trimmedBytes, t.reclaimedBytes) << "every step a probe";
  }
  EXPECT_LE(writesTo("editor.slice"), 2 * 60 / 6 + 1);
  for (const Write& w : sim_.writes()) {
    EXPECT_NE(w.path, "") << "never through the root: user.slice is protected";
    EXPECT_EQ(w.path.rfind("user.slice", 0), std::string::npos) << "disabled: never written";
  }
  EXPECT_EQ(status().idlePeriods, 0u) << "the machine itself was never idle";
  sim_.cgroup("editor.slice").cpuShare = 0;  // the editor stops: idle after its own grace
  EXPECT_TRUE(runUntil([&] { return writesTo("editor.slice") > 0; }, 3min));
}

// Two targets' steps in one pass, and the second's cache shrinks while the first is written
// (another reclaim, the work deleting its files): the second step starts from its target
// measured again, not from the plan's figure, and stops at its floor.
TEST_F(EngineRulesTest, AStepAfterAnotherInOnePassStartsFromItsTargetMeasuredAgain) {
  sim_.addCgroup("a.slice", 200 * kMiB);
  sim_.addCgroup("b.slice", 200 * kMiB);
  bool shrunk = false;
  std::uint64_t lowestB = UINT64_MAX;
  sim_.beforeWrite = [&](const std::string& path, std::uint64_t) {
    if (path == "a.slice" && !std::exchange(shrunk, true)) sim_.cgroup("b.slice").file = 40 * kMiB;
    if (path == "b.slice") lowestB = std::min(lowestB, sim_.cgroup("b.slice").file);
  };
  start("rules:\n  - match: a.slice\n    floor: 32M\n  - match: b.slice\n    floor: 32M\n");
  ASSERT_TRUE(runUntil([&] { return shrunk && lowestB != UINT64_MAX; }, 5min)) << "both were written";
  run(10s);
  EXPECT_GE(sim_.cgroup("b.slice").file, 32 * kMiB) << "b.slice written under its floor";
  EXPECT_LT(writesTo("b.slice"), 3u) << "40 MiB, 8 over its floor: one small chunk at most";
}

// Below a cgroup no rule can match under, the walk lists nothing: a node of 1,000 pods with
// three containers each is not listed down to every container, and the targets are the same.
TEST_F(EngineRulesTest, TheWalkListsOnlyWhereARuleCouldMatch) {
  sim_.addCgroup("kubepods.slice", 0);
  for (int p = 0; p < 100; ++p) {
    const std::string pod = "kubepods.slice/pod" + std::to_string(p);
    sim_.addCgroup(pod, 8 * kMiB);
    for (int c = 0; c < 3; ++c)
      sim_.addCgroup(pod + "/ctr" + std::to_string(c), 8 * kMiB);
  }
  start("rules:\n  - match: kubepods.slice/*\n    idle_source: cgroup\n");
  run(10s);
  ASSERT_GE(sim_.walks, 1);
  EXPECT_EQ(sim_.listed, 2u) << "the root and kubepods.slice; the pods are entries of its listing";
  std::size_t pods = 0;
  for (const auto& t : engine_->targets())
    pods += t.path.starts_with("kubepods.slice/pod") ? 1 : 0;
  EXPECT_EQ(pods, 100u) << "every pod is a target, its containers inside it";
  run(3min);
  EXPECT_NEAR(static_cast<double>(sim_.subtreeFile("kubepods.slice/pod7")) / kMiB, 16, 1) << "to its floor";
}

TEST_F(EngineRulesTest, CgroupsComingAndGoingDuringPassesAreHandled) {
  sim_.setMachineBusy(0.6);
  sim_.addCgroup("build.slice", 400 * kMiB);
  start(kBuildEditorUserRules);
  for (int round = 0; round < 300; ++round) {
    for (int i = 0; i < 20; ++i) {
      const std::string job = "build.slice/job" + std::to_string(i);
      if ((i + round) % 3 == 0)
        sim_.removeCgroup(job);
      else if (!sim_.has(job))
        sim_.addCgroup(job, 10 * kMiB);
    }
    if (round % 7 == 0) sim_.queueWriteStatus(cgroup::ReclaimStatus::Gone, ENOENT);  // gone mid-step
    run(1s);
  }
  EXPECT_GT(writesTo("build.slice"), 0u);
  EXPECT_EQ(count("walk_failed"), 0u);
}

TEST_F(EngineRulesTest, ACgroupMadeAgainUnderItsOldNameStartsAfresh) {
  sim_.setMachineBusy(0.6);
  sim_.addCgroup("build.slice", 400 * kMiB);
  start(kBuildEditorUserRules);
  ASSERT_TRUE(runUntil([&] { return engine_->targets().front().idle; }, 3min));
  const std::uint32_t id = engine_->targets().front().id;
  sim_.removeCgroup("build.slice");
  sim_.addCgroup("build.slice", 400 * kMiB);  // a new inode
  run(10s);
  ASSERT_EQ(engine_->targets().size(), 1u);  // the root mixes rules: reclaimd descends to build.slice
  const auto& t = engine_->targets().front();
  EXPECT_EQ(t.path, "build.slice");
  EXPECT_NE(t.id, id) << "a new cgroup: new state";
  EXPECT_FALSE(t.idle) << "its grace period starts over";
}

TEST_F(EngineRulesTest, AReloadKeepsTargetsAndTheirHistories) {
  sim_.setMachineBusy(0.6);
  sim_.addCgroup("build.slice", 400 * kMiB);
  start(kBuildEditorUserRules);
  ASSERT_TRUE(runUntil([&] { return engine_->targets().front().idle; }, 3min));
  const std::uint32_t id = engine_->targets().front().id;
  engine_->setPolicy(*policies::parsePolicy(kBuildEditorUserRules, "policy.yaml"));
  EXPECT_FALSE(runUntil([&] { return !engine_->targets().front().idle; }, 2s)) << "no new grace period after a reload";
  EXPECT_EQ(engine_->targets().front().id, id);
}

// Status and metrics name a target's rule by its match text: a reload that reorders the rules
// changes no label (list positions would: dashboards and alerts keyed on them would break), not
// even for the turn before the next walk.
TEST_F(EngineRulesTest, ATargetsRuleIsNamedByItsMatchTextWhateverItsPosition) {
  sim_.setMachineBusy(0.6);
  sim_.addCgroup("build.slice", 400 * kMiB);
  sim_.addCgroup("editor.slice", 200 * kMiB);
  start(kBuildEditorUserRules);
  run(2s);
  auto rules = [&] {
    controller::Status st;
    engine_->fill(st, clock_.now(), 0, [](TimePoint) { return std::string(); });
    std::map<std::string, std::string> out;
    for (const controller::TargetStatus& t : st.targets)
      out[t.cgroup] = t.rule;
    return out;
  };
  const std::map<std::string, std::string> want = {{"build.slice", "build.slice"}, {"editor.slice", "editor.slice"}};
  EXPECT_EQ(rules(), want);
  constexpr const char* kReordered = R"(rules:
  - match: user.slice/**
    mode: disabled
  - match: editor.slice
    idle_source: cgroup
  - match: build.slice
    idle_source: cgroup
    floor: 32M
)";
  engine_->setPolicy(*policies::parsePolicy(kReordered, "policy.yaml"));
  EXPECT_EQ(rules(), want) << "at once, before the next walk has resolved the rules again";
  run(2s);
  EXPECT_EQ(rules(), want);
}

TEST_F(EngineRulesTest, RulesNeverFallBackToDropCaches) {
  sim_.addCgroup("build.slice", 400 * kMiB);
  start(kBuildEditorUserRules);
  Capabilities caps = fullCapabilities();
  caps.reclaimWritable = false;
  caps.reclaimProblem = "no memory.reclaim";
  engine_->setCapabilities(caps, "test");
  EXPECT_TRUE(engine_->mode().unusable);
  EXPECT_NE(engine_->mode().reason.find("per-cgroup rules cannot fall back to drop_caches"), std::string::npos);
  run(5min);
  EXPECT_EQ(drops(), 0u);
  EXPECT_TRUE(sim_.writes().empty());
}

TEST_F(EngineRulesTest, DisabledModeWatchesOnly) {
  sim_.addCgroup("work", 600 * kMiB);
  start("mode: disabled\n");
  run(10min);
  EXPECT_TRUE(sim_.writes().empty());
  EXPECT_EQ(drops(), 0u);
  EXPECT_EQ(compactions(), 0u);
  EXPECT_EQ(status().idlePeriods, 1u) << "it still watches";
}

TEST_F(EngineRulesTest, AKernelThatFreesMoreThanAskedKeepsTheMachineAtItsFloorUnderACgroupTarget) {
  sim_.addCgroup("work", 1000 * kMiB);
  sim_.setOvershoot(1.25);  // as 6.1 does
  start("reclaim: {floor: 900M}\nrules:\n  - match: work\n    floor: 16M\n");
  run(5min);
  EXPECT_GE(sim_.subtreeFile(""), 899 * kMiB) << "the machine's floor, 900 MiB, binds the cgroup's steps";
  EXPECT_LE(sim_.subtreeFile(""), 903 * kMiB) << "and is reached";
}

}  // namespace
}  // namespace reclaimd::testing

// A reload (SIGHUP) under way of a pressure backoff: the calm period and the halved step are the
// machine's and the targets', not the policy file's, and outlive the new policy.
#include <gtest/gtest.h>

#include "tests/unit/EngineHarness.h"

namespace reclaimd::testing {
namespace {

using namespace std::chrono_literals;

class EngineReloadTest : public EngineHarness {};

TEST_F(EngineReloadTest, AReloadKeepsTheMachinesBackoff) {
  ASSERT_TRUE(twoStepsThenAStall());
  ASSERT_EQ(backoffs(), 1u);
  sim_.setMachineStall(0);
  const std::size_t before = sim_.writes().size();
  run(5s);
  reload(engine_->policy());  // what SIGHUP does with an unchanged file
  run(15s);
  EXPECT_EQ(sim_.writes().size(), before) << "nothing written within the calm period, reload or not";
  EXPECT_TRUE(backedOff());
  const std::size_t resumed = steps().size();  // none since the backoff
  ASSERT_TRUE(runUntil([&] { return !backedOff(); }, 15s));
  run(5s);
  ASSERT_GT(steps().size(), resumed);
  EXPECT_EQ(steps()[resumed].bytes, 32 * kMiB) << "the step halved by the backoff, as without the reload";
}

TEST_F(EngineReloadTest, AReloadKeepsATargetsBackoff) {
  sim_.addCgroup("work", 3000 * kMiB);
  sim_.addCgroup("app.slice", 3000 * kMiB);
  start("rules:\n  - match: app.slice\n    floor: 128M\npressure: {calm: 30s}\n");
  ASSERT_TRUE(runUntil([&] { return steps().size() >= 2; }, 3min));
  sim_.cgroup("app.slice").stallShare = 0.4;
  run(1s);
  sim_.pressureFires("app.slice");
  ASSERT_TRUE(runUntil([&] { return backoffs("app.slice") >= 1; }, 5s));
  sim_.cgroup("app.slice").stallShare = 0;
  run(2s);
  reload(engine_->policy());
  const std::size_t from = sim_.writes().size();
  run(20s);
  for (std::size_t i = from; i < sim_.writes().size(); ++i)
    EXPECT_NE(sim_.writes()[i].path, "app.slice") << "app.slice is still in its calm period";
}

// A probe's refaults are coming in (the machine's, from /proc/vmstat) when a reload turns the pressure
// guards off: the refaults are no longer read, so the round can never be judged, and the probes go on
// without that judgement instead of waiting on it for as long as the daemon runs.
TEST_F(EngineReloadTest, AReloadThatTurnsPressureOffWhileRefaultsComeInLetsProbesGoOn) {
  ASSERT_TRUE(aProbeRoundComingIn()) << "a round's refaults coming in";
  policies::Policy off = engine_->policy();
  off.pressure.enabled = false;
  reload(off);
  const std::size_t from = sim_.writes().size();
  run(2min);
  EXPECT_GT(sim_.writes().size(), from) << "probes go on";
  EXPECT_FALSE(probeRoundComingIn()) << status().targets.at(0).trimWhy;
}

// The machine's pressure file cannot be opened when the reload watches it afresh (out of fds, say):
// no total is read any more, and the calm period of the backoff it inherited runs out by the clock,
// as it does while totals are unreadable, instead of holding every step for as long as the daemon runs.
TEST_F(EngineReloadTest, ABackoffWhosePressureFileCannotBeOpenedAfterAReloadStillEnds) {
  ASSERT_TRUE(twoStepsThenAStall());
  ASSERT_TRUE(backedOff());
  sim_.setMachineStall(0);
  sim_.feedAs = controller::PressureFeed::Off;
  reload(engine_->policy());
  const std::size_t before = steps().size();
  run(2min);
  EXPECT_FALSE(backedOff());
  EXPECT_GT(steps().size(), before) << "reclaim resumed after the calm period";
}

TEST_F(EngineReloadTest, ATargetsBackoffWhosePressureFileCannotBeOpenedAfterAReloadStillEnds) {
  sim_.addCgroup("work", 3000 * kMiB);
  sim_.addCgroup("app.slice", 3000 * kMiB);
  start("rules:\n  - match: app.slice\n    floor: 128M\npressure: {calm: 30s}\n");
  ASSERT_TRUE(runUntil([&] { return steps("app.slice").size() >= 2; }, 3min));
  sim_.cgroup("app.slice").stallShare = 0.4;
  run(1s);
  sim_.pressureFires("app.slice");
  ASSERT_TRUE(runUntil([&] { return backoffs("app.slice") >= 1; }, 5s));
  sim_.cgroup("app.slice").stallShare = 0;
  sim_.feedAs = controller::PressureFeed::Off;
  reload(engine_->policy());
  const std::size_t before = steps("app.slice").size();
  run(2min);
  EXPECT_FALSE(backedOff());
  EXPECT_GT(steps("app.slice").size(), before) << "app.slice is reclaimed again after its calm period";
}

// A step's refault watch is under way when a reload turns the pressure guards off: its refaults are
// no longer judged, and the watch ends rather than keeping the target measured on every tick.
TEST_F(EngineReloadTest, AReloadThatTurnsPressureOffEndsAStepsRefaultWatch) {
  sim_.addCgroup("work", 600 * kMiB);
  start();
  ASSERT_TRUE(runUntil([&] { return !sim_.writes().empty(); }, 3min));
  policies::Policy off = engine_->policy();
  off.pressure.enabled = false;
  reload(off);
  run(60s);  // at the floor
  sim_.reads.clear();
  run(20s);
  EXPECT_LE(sim_.reads["meminfo"], 5) << "the cache is looked at every kRecheckAtFloor (5 s), not every tick";
}

// Reordering the rules, or inserting one before the others, changes no cgroup's governing rule:
// each target keeps its state (here its own idle period, which a fresh target would warm up
// again for the whole grace). A rule whose match changed governs anew: its cgroups start afresh.
TEST_F(EngineReloadTest, AReloadThatReordersTheRulesKeepsEachTargetsState) {
  sim_.addCgroup("a.slice", 400 * kMiB);
  sim_.addCgroup("b.slice", 400 * kMiB);
  auto policyOf = [](const std::string& yaml) {
    auto p = policies::parsePolicy(yaml, "policy.yaml");
    EXPECT_TRUE(p) << p.error().message();
    return p ? *p : policies::Policy{};
  };
  const std::string a = "  - match: a.slice\n    idle_source: cgroup\n";
  const std::string b = "  - match: b.slice\n    idle_source: cgroup\n    floor: 64M\n";
  start("rules:\n" + a + b);
  auto find = [&](const std::string& path) -> const controller::TargetState& {
    for (const auto& t : engine_->targets())
      if (t.path == path) return t;
    ADD_FAILURE() << path << " is no target";
    return engine_->targets().front();
  };
  ASSERT_TRUE(runUntil([&] { return find("a.slice").idle && find("b.slice").idle; }, 5min));
  const std::uint32_t idA = find("a.slice").id, idB = find("b.slice").id;
  reload(policyOf("rules:\n" + b + a));
  run(1s);
  EXPECT_EQ(find("a.slice").id, idA) << "reordered: the same rule governs a.slice";
  EXPECT_EQ(find("b.slice").id, idB);
  EXPECT_TRUE(find("a.slice").idle) << "its idle period goes on";
  const std::string a32 = "  - match: a.slice\n    idle_source: cgroup\n    floor: 32M\n";
  reload(policyOf("rules:\n  - match: c.slice\n" + b + a32));
  run(1s);
  EXPECT_EQ(find("a.slice").id, idA) << "a rule inserted before it, and its own settings changed";
  EXPECT_EQ(find("a.slice").gov.floor, 32 * kMiB) << "under the settings of the rule now";
  EXPECT_TRUE(find("a.slice").idle);
  EXPECT_EQ(find("b.slice").id, idB);
  reload(policyOf("rules:\n" + a + "  - match: b.*\n    idle_source: cgroup\n"));
  run(1s);
  EXPECT_NE(find("b.slice").id, idB) << "another rule governs b.slice: fresh state";
  EXPECT_EQ(find("a.slice").id, idA);
}

}  // namespace
}  // namespace reclaimd::testing

// What the engine tells an administrator: status figures while nothing is written (warm-up, a
// busy machine), why a target waits, until when a backoff lasts, and what the log says at info
// while trimming goes on for hours.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "controller/operate/Status.h"
#include "controller/shell/Turn.h"
#include "tests/unit/EngineHarness.h"

namespace reclaimd::testing {
namespace {

using namespace std::chrono_literals;

class EngineStatusTest : public EngineHarness {
 protected:
  // The busy machine's work runs in `work`, where its cache is.
  EngineStatusTest() { sim_.chargeMachineTo("work"); }
  // The status as `reclaimd status` gets it, at Unix time 1000 with engine times shown as the
  // seconds since the test's start.
  controller::Status status() {
    controller::Status s;
    engine_->fill(s, clock_.now(), 1000, [this](TimePoint at) {
      return std::to_string(std::chrono::duration_cast<std::chrono::seconds>(at - start_).count()) + "s";
    });
    engine_->fillReclaimable(s, controller::takeReadings(engine_->statusReads(), sim_));
    return s;
  }
  std::size_t atInfo(const std::string& name) const {
    const auto events = named(name);
    return static_cast<std::size_t>(
        std::count_if(events.begin(), events.end(), [](const Event& e) { return e.severity() >= Severity::Info; }));
  }
};

TEST_F(EngineStatusTest, WarmupAndABusyMachineShowWhatIsReclaimable) {
  sim_.addCgroup("work", 1600 * kMiB);
  sim_.setMachineBusy(0.04);
  start("trim: {enabled: false}\n");
  run(30s);
  controller::Status s = status();
  ASSERT_EQ(s.idleState, "warmup");
  ASSERT_EQ(s.targets.size(), 1u);
  const double above = static_cast<double>(sim_.subtreeFile("") - 128 * kMiB) / kMiB;
  EXPECT_NEAR(static_cast<double>(s.targets[0].reclaimableBytes) / kMiB, above, 1) << controller::formatStatus(s);
  ASSERT_TRUE(s.waitingBytes);
  EXPECT_NEAR(static_cast<double>(*s.waitingBytes) / kMiB, above, 1);
  run(5min);
  s = status();
  ASSERT_EQ(s.idleState, "busy");
  EXPECT_NEAR(static_cast<double>(s.targets[0].reclaimableBytes) / kMiB, above, 1) << "busy: the same, read afresh";
  EXPECT_NE(controller::formatStatus(s).find("reclaimable: 1.4 GiB above the machine's floor"), std::string::npos)
      << controller::formatStatus(s);
}

TEST_F(EngineStatusTest, ATargetWaitingForItsCacheToRegrowSaysSo) {
  sim_.addCgroup("work", 1000 * kMiB);
  start();
  for (int i = 0; i < 4; ++i)                               // the first step's four 64 MiB chunks
    sim_.queueWriteStatus(cgroup::ReclaimStatus::Done, 0);  // the kernel frees nothing
  ASSERT_TRUE(runUntil([&] { return !sim_.writes().empty(); }, 3min));
  const std::size_t firstStep = sim_.writes().size();
  ASSERT_EQ(firstStep, 4u);
  run(5s);
  controller::Status s = status();
  ASSERT_EQ(s.targets.size(), 1u);
  ASSERT_TRUE(s.targets[0].waitsForReclaimableBytes) << controller::formatStatus(s);
  EXPECT_EQ(sim_.writes().size(), firstStep) << "no step meanwhile";
  EXPECT_GT(*s.targets[0].waitsForReclaimableBytes, s.targets[0].reclaimableBytes);
  EXPECT_NE(controller::formatStatus(s).find("waits for reclaimable to regrow to"), std::string::npos);
  // Regrown by a chunk: stepping again, and no longer waiting.
  sim_.cgroup("work").file += 100 * kMiB;
  ASSERT_TRUE(runUntil([&] { return sim_.writes().size() > firstStep; }, 30s));
  run(30s);
  EXPECT_FALSE(status().targets[0].waitsForReclaimableBytes) << controller::formatStatus(status());
}

TEST_F(EngineStatusTest, TheReclaimFormatIsNamedOnlyWhereMemoryReclaimIsWritten) {
  start("mode: gradual\n");
  EXPECT_EQ(status().format, "swappiness=0");
  EXPECT_NE(controller::formatMetrics(status()).find("format=\"swappiness=0\""), std::string::npos);
  start("mode: dropcache\n");
  const controller::Status s = status();
  EXPECT_EQ(s.effectiveMode, "dropcache");
  EXPECT_EQ(s.format, "");
  EXPECT_TRUE(nlohmann::json::parse(controller::formatStatusJson(s))["format"].is_null())
      << controller::formatStatusJson(s);
  EXPECT_EQ(controller::formatMetrics(s).find("swappiness"), std::string::npos) << controller::formatMetrics(s);
}

TEST_F(EngineStatusTest, ABackoffSaysWhenItEnds) {
  sim_.addCgroup("work", 2000 * kMiB);
  start("pressure: {calm: 60s}\n");
  ASSERT_TRUE(runUntil([&] { return !sim_.writes().empty(); }, 3min));
  stallTheMachine();
  ASSERT_EQ(backoffs(), 1u);
  const controller::Status s = status();
  ASSERT_FALSE(s.pressure.empty());
  const controller::ScopeStatus& machine = s.pressure.front();
  ASSERT_TRUE(machine.backedOff);
  ASSERT_TRUE(machine.resumeAtTimestamp);
  const double in = *machine.resumeAtTimestamp - 1000;
  EXPECT_GT(in, 50);
  EXPECT_LE(in, 60.5) << "the calm period from the last pressure";
  const long at = std::chrono::duration_cast<std::chrono::seconds>(clock_.now() - start_).count();
  EXPECT_EQ(machine.resumeAt, std::to_string(at + static_cast<long>(std::lround(in))) + "s");
  EXPECT_NE(controller::formatStatus(s).find("BACKED OFF until " + machine.resumeAt), std::string::npos)
      << controller::formatStatus(s);
}

TEST_F(EngineStatusTest, LogsNameRulesByTheirMatchText) {
  sim_.setMachineBusy(0.6);
  sim_.addCgroup("build.slice", 400 * kMiB);
  start("rules:\n  - match: other.slice\n  - match: build.slice\n    idle_source: cgroup\n");
  ASSERT_TRUE(runUntil([&] { return !steps().empty(); }, 4min));
  ASSERT_FALSE(named("reclaim_step").empty());
  EXPECT_EQ(named("reclaim_step")[0].field("rule"), "build.slice") << "as status and metrics name it";
}

TEST_F(EngineStatusTest, TrimmingSaysASummaryAtInfoAndEachProbeAtDebug) {
  sim_.addCgroup("work", 3000 * kMiB);
  sim_.setMachineBusy(0.04);
  start("reclaim: {chunk: 4MiB}\n");  // probes never grow past 4 MiB: they go on for the whole run
  run(2min + 25min);
  const auto steps = named("reclaim_step");
  ASSERT_GE(steps.size(), 100u);
  EXPECT_EQ(atInfo("reclaim_step"), 0u) << "a probe every 6 s is not an info line";
  const auto summaries = named("trim_summary");
  ASSERT_EQ(summaries.size(), 2u) << "one per 10 minutes";
  double freed = 0;
  for (const Event& e : summaries) {
    EXPECT_EQ(e.severity(), Severity::Info);
    EXPECT_EQ(e.field("cgroup"), "/");
    EXPECT_EQ(e.field("rule"), "machine");
    EXPECT_GE(std::stoi(*e.field("probes")), 50) << "a probe every 6 s or so";
    freed += mib(*e.field("freed_mib"));
  }
  double probed = 0;
  for (const Event& e : steps)
    probed += mib(*e.field("freed_mib"));
  EXPECT_LE(freed, probed + 0.2);
  EXPECT_GT(freed, probed * 0.6) << "the summaries carry most of what was trimmed (the last minutes are not due yet)";
  EXPECT_EQ(atInfo("trim_started"), 1u);
}

TEST_F(EngineStatusTest, NoTrimStartAtInfoForATargetUnderItsFloor) {
  sim_.addCgroup("work", 50 * kMiB);  // the machine's cache under the 128 MiB floor
  sim_.setMachineBusy(0.04);
  start();
  run(5min);
  EXPECT_TRUE(sim_.writes().empty());
  EXPECT_EQ(atInfo("trim_started"), 0u);
}

TEST_F(EngineStatusTest, NoTargetIdleForADisabledTarget) {
  sim_.addCgroup("user.slice", 300 * kMiB);
  sim_.addCgroup("build.slice", 300 * kMiB);
  start("rules:\n  - match: user.slice\n    mode: disabled\n  - match: build.slice\n");
  run(3min);
  std::vector<std::string> idle;
  for (const Event& e : named("target_idle"))
    idle.push_back(*e.field("cgroup"));
  EXPECT_NE(std::find(idle.begin(), idle.end(), "build.slice"), idle.end());
  EXPECT_EQ(std::find(idle.begin(), idle.end(), "user.slice"), idle.end()) << "disabled: nothing acts on it";
}

}  // namespace
}  // namespace reclaimd::testing

// End to end with per-cgroup rules on a fixture tree: per-cgroup idleness, protection of
// disabled cgroups, cgroups vanishing between passes, check-config --explain.
#include <gtest/gtest.h>
#include <signal.h>

#include <thread>

#include "tests/unit/DaemonHarness.h"
#include "tests/unit/FakeMachine.h"
#include "tests/unit/Fixture.h"
#include "tests/unit/Process.h"

namespace reclaimd::testing {
namespace {

using namespace std::chrono_literals;

class DaemonRulesTest : public DaemonHarness {};

constexpr const char* kRules = R"(idle:
  grace: 1s
  interval: 1s
  sample_period: 100ms
rules:
  - match: build.slice
    idle_source: cgroup
    floor: 32M
  - match: editor.slice
    idle_source: cgroup
  - match: user.slice/**
    mode: disabled
)";

TEST_F(DaemonRulesTest, IdleCgroupIsReclaimedWhileAnotherIsBusyAndTheMachineToo) {
  FakeMachine m(fx_);
  m.setBusy(30);  // the machine is busy: machine-wide idleness never comes
  m.addCgroup("build.slice", 400);
  m.addCgroup("editor.slice", 200);
  m.addCgroup("user.slice", 300);
  m.addCgroup("user.slice/session-1.scope", 300);
  m.setCgroupBusy("editor.slice", 2000);  // 10 % of a CPU: a language server ticking
  auto d = startWith(kRules);
  ASSERT_TRUE(waitLog("event=reclaim_step cgroup=build.slice")) << log();
  EXPECT_TRUE(logHas("event=target_idle cgroup=build.slice source=cgroup")) << log();
  EXPECT_EQ(fx_.read("cg/build.slice/memory.reclaim"), "67108864 swappiness=0");
  std::this_thread::sleep_for(1500ms);
  EXPECT_FALSE(logHas("event=target_idle cgroup=editor.slice")) << log();
  EXPECT_EQ(fx_.read("cg/editor.slice/memory.reclaim"), "") << "busy: never written";
  EXPECT_EQ(fx_.read("cg/user.slice/memory.reclaim"), "") << "disabled: never written";
  EXPECT_EQ(fx_.read("cg/user.slice/session-1.scope/memory.reclaim"), "");
  EXPECT_EQ(fx_.read("cg/memory.reclaim"), "0 swappiness=0") << "the root: only the probe";
  EXPECT_FALSE(logHas("event=idle_entered")) << "the machine itself was never idle";
  // The editor stops ticking: it becomes idle after its own grace period.
  m.setCgroupBusy("editor.slice", 0);
  EXPECT_TRUE(waitLog("event=reclaim_step cgroup=editor.slice")) << log();
  d->signal(SIGTERM);
  EXPECT_EQ(d->wait(5s), 0) << log();
}

TEST_F(DaemonRulesTest, VanishingAndNewCgroupsAreHandled) {
  FakeMachine m(fx_);
  m.setBusy(30);
  m.addCgroup("build.slice", 400);
  for (int i = 0; i < 20; ++i)
    m.addCgroup("build.slice/job" + std::to_string(i), 10);
  auto d = startWith(kRules);
  ASSERT_TRUE(waitLog("event=walk cgroups=")) << log();
  // Cgroups come and go between and during passes.
  for (int round = 0; round < 30; ++round) {
    for (int i = 0; i < 20; ++i) {
      const std::string job = "build.slice/job" + std::to_string(i);
      if ((i + round) % 3 == 0)
        m.removeCgroup(job);
      else
        m.addCgroup(job, 10);
    }
    fx_.remove("cg/tmp-" + std::to_string(round));
    fx_.mkdir("cg/tmp-" + std::to_string(round + 1));
    std::this_thread::sleep_for(50ms);
  }
  EXPECT_TRUE(d->running()) << log();
  EXPECT_TRUE(waitLog("event=reclaim_step cgroup=build.slice")) << log();
  EXPECT_FALSE(logHas(" error ")) << log();
  d->signal(SIGTERM);
  EXPECT_EQ(d->wait(5s), 0) << log();
}

TEST_F(DaemonRulesTest, RecreatedCgroupStartsAfresh) {
  FakeMachine m(fx_);
  m.setBusy(30);
  m.addCgroup("build.slice", 400);
  auto d = startWith(kRules);
  ASSERT_TRUE(waitLog("event=target_idle cgroup=build.slice")) << log();
  // Same name, new directory (new inode): a new cgroup whose grace period starts over.
  m.removeCgroup("build.slice");
  ASSERT_TRUE(waitLog("event=walk cgroups=1 ")) << log();
  m.addCgroup("build.slice", 400);
  const std::string before = log();
  ASSERT_TRUE(eventually(
      [&] {
        return log().size() > before.size() &&
               log().find("event=target_idle cgroup=build.slice", before.size()) != std::string::npos;
      },
      10s))
      << log();
  d->signal(SIGTERM);
  EXPECT_EQ(d->wait(5s), 0);
}

TEST_F(DaemonRulesTest, RulesNeverFallBackToDropCaches) {
  FakeMachine m(fx_);
  fx_.remove("cg/memory.reclaim");
  auto d = startWith(kRules);
  EXPECT_EQ(d->wait(5s), 69) << log();
  EXPECT_TRUE(logHas("per-cgroup rules cannot fall back to drop_caches")) << log();
  EXPECT_EQ(fx_.read("proc/sys/vm/drop_caches"), "");
}

TEST(CliRules, ExplainNamesTheWinnerAndWhy) {
  Fixture fx;
  fx.write("p.yaml", kRules);
  auto [code, out] = runCommand({RECLAIMD_BINARY, "check-config", fx.path("p.yaml"), "--explain",
                                 "user.slice/session-1.scope", "/build.slice", "init.scope"});
  EXPECT_EQ(code, 0) << out;
  EXPECT_NE(out.find("user.slice/session-1.scope:\n  governed by rule 3 (line 11, match \"user.slice/**\")"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("build.slice:\n  governed by rule 1"), std::string::npos) << out;
  EXPECT_NE(out.find("init.scope:\n  no rule matches it or its ancestors"), std::string::npos) << out;
  auto [bad, badOut] = runCommand({RECLAIMD_BINARY, "check-config", fx.path("p.yaml"), "--explain", "a/../../etc"});
  EXPECT_EQ(bad, 64) << badOut;
}

}  // namespace
}  // namespace reclaimd::testing

// `reclaimd check-config` and `reclaimd probe` as an administrator runs them: the real binary on
// fixture files, its exit code and what it prints.
#include <gtest/gtest.h>

#include "controller/Probe.h"
#include "policies/Loader.h"
#include "tests/unit/Fixture.h"
#include "tests/unit/Process.h"

namespace reclaimd::controller {
namespace {

using testing::Fixture;
using testing::runCommand;

TEST(CheckConfig, AMissingFileCannotBeOpenedNotInvalid) {
  Fixture fx;
  auto [code, out] = runCommand({RECLAIMD_BINARY, "check-config", fx.path("absent.yaml")});
  EXPECT_EQ(code, 66) << out;  // EX_NOINPUT, as for every file a command cannot open
  EXPECT_NE(out.find("absent.yaml: No such file or directory"), std::string::npos) << out;
  auto [runCode, runOut] = runCommand({RECLAIMD_BINARY, "probe", "--config", fx.path("absent.yaml")});
  EXPECT_EQ(runCode, 66) << runOut;
}

TEST(CheckConfig, ErrorsComeInFileAndLineOrder) {
  Fixture fx;
  // The loader checks keys in its table's order (idle before trim); the file says trim first.
  fx.write("p.yaml", "trim:\n  percent: 50\nidle:\n  grace: 0s\nrules:\n  - match: a\n    flor: 1\n");
  fx.write("p.d/10-a.yaml", "reclaim:\n  chunk: 0\nmode: sometimes\n");
  auto [code, out] = runCommand({RECLAIMD_BINARY, "check-config", fx.path("p.yaml")});
  EXPECT_EQ(code, 78) << out;
  const std::vector<std::string> order = {"p.yaml:2:12: trim.percent", "p.yaml:4:10: idle.grace",
                                          "p.yaml:7:5: rules[1].flor", "10-a.yaml:2:10: reclaim.chunk",
                                          "10-a.yaml:3:7: mode"};
  std::size_t at = 0;
  for (const std::string& e : order) {
    const std::size_t found = out.find(e);
    ASSERT_NE(found, std::string::npos) << e << "\n" << out;
    EXPECT_GT(found, at) << e << " comes too early\n" << out;
    at = found;
  }
}

// Only *.yaml drop-ins are read: a *.yml one was meant as a drop-in too, and is named as skipped,
// a warning that leaves the policy valid. A start says the same in its log.
TEST(CheckConfig, WarnsOfADropInNamedYml) {
  Fixture fx;
  fx.write("policy.yaml", "mode: gradual\n");
  fx.write("policy.d/10-build.yaml", "rules:\n  - match: build.slice\n    floor: 64M\n");
  fx.write("policy.d/20-grace.yml", "idle:\n  grace: 5m\n");
  auto [code, out] = runCommand({RECLAIMD_BINARY, "check-config", fx.path("policy.yaml")});
  EXPECT_EQ(code, 0) << out;
  EXPECT_NE(out.find("warning: " + fx.path("policy.d/20-grace.yml") + ": skipped: drop-ins are read only when named "
                     "*.yaml"),
            std::string::npos)
      << out;
  EXPECT_EQ(out.find("10-build.yaml: skipped"), std::string::npos) << out;
  fx.mkdir("cg");  // not a cgroup2 root: the start stops after loading the policy
  auto [runCode, runOut] = runCommand({RECLAIMD_BINARY, "run", "--config", fx.path("policy.yaml"), "--cgroup-root",
                                       fx.path("cg"), "--status-socket", ""});
  EXPECT_NE(runCode, 0) << runOut;
  EXPECT_NE(runOut.find("event=dropin_skipped file=" + fx.path("policy.d/20-grace.yml")), std::string::npos) << runOut;
}

TEST(CheckConfig, ATabIndentedFileIsExplained) {
  Fixture fx;
  fx.write("tab.yaml", "mode: gradual\nidle:\n\tgrace: 5m\n");
  auto [code, out] = runCommand({RECLAIMD_BINARY, "check-config", fx.path("tab.yaml")});
  EXPECT_EQ(code, 78) << out;
  EXPECT_NE(out.find("tab.yaml:3:"), std::string::npos) << out;
  EXPECT_NE(out.find("line 3 is indented with a tab: YAML indents with spaces only"), std::string::npos) << out;
  // No tab, no such hint.
  fx.write("colon.yaml", "idle:\n  grace: 5m: 6m\n");
  auto [code2, out2] = runCommand({RECLAIMD_BINARY, "check-config", fx.path("colon.yaml")});
  EXPECT_EQ(code2, 78) << out2;
  EXPECT_EQ(out2.find("tab"), std::string::npos) << out2;
}

TEST(CheckConfig, ListsTheDropInsItMerged) {
  Fixture fx;
  fx.write("policy.yaml", "mode: gradual\n");
  auto [code, out] = runCommand({RECLAIMD_BINARY, "check-config", fx.path("policy.yaml")});
  EXPECT_EQ(code, 0) << out;
  EXPECT_NE(out.find("drop-ins: none in " + fx.path("policy.d")), std::string::npos) << out;
  fx.write("policy.d/20-grace.yaml", "idle:\n  grace: 5m\n");
  fx.write("policy.d/10-build.yaml", "rules:\n  - match: build.slice\n    floor: 64M\n");
  fx.write("policy.d/notes.txt", "not a drop-in\n");
  auto [code2, out2] = runCommand({RECLAIMD_BINARY, "check-config", fx.path("policy.yaml")});
  EXPECT_EQ(code2, 0) << out2;
  EXPECT_NE(out2.find("drop-ins merged, in this order:\n  " + fx.path("policy.d/10-build.yaml") + "\n  " +
                      fx.path("policy.d/20-grace.yaml") + "\n"),
            std::string::npos)
      << out2;
  EXPECT_EQ(out2.find("notes.txt"), std::string::npos) << out2;
  EXPECT_NE(out2.find("idle.grace: 5m\n"), std::string::npos) << out2;
  EXPECT_NE(out2.find("line 2 of " + fx.path("policy.d/10-build.yaml") + " match \"build.slice\""), std::string::npos)
      << out2;
}

TEST(CheckConfig, HelpNamesWhatEachOptionTakes) {
  auto [code, out] = runCommand({RECLAIMD_BINARY, "check-config", "--help"});
  EXPECT_EQ(code, 0) << out;
  EXPECT_NE(out.find("Usage: reclaimd check-config [OPTIONS] FILE"), std::string::npos) << out;
  EXPECT_NE(out.find("--explain CGROUP ..."), std::string::npos) << out;
  auto [runCode, runOut] = runCommand({RECLAIMD_BINARY, "run", "--help"});
  EXPECT_EQ(runCode, 0) << runOut;
  for (const char* option : {"--proc-root DIR", "--cgroup-root DIR", "--config FILE", "--log-level LEVEL",
                             "--status-socket PATH", "--metrics-file PATH", "--metrics-listen HOST:PORT"})
    EXPECT_NE(runOut.find(option), std::string::npos) << option << "\n" << runOut;
  EXPECT_EQ(runOut.find("TEXT"), std::string::npos) << runOut;
}

// A proc root whose pressure file is a plain file: a trigger cannot be registered there, and the
// probe says which one it tried.
TEST(CheckConfig, AnEmptyCgroupRootIsRefusedNotTakenAsNotGiven) {
  Fixture fx;
  for (const char* command : {"run", "probe"}) {
    auto [code, out] = runCommand({RECLAIMD_BINARY, command, "--cgroup-root", "", "--proc-root", fx.path("proc")});
    EXPECT_EQ(code, 64) << command << "\n" << out;
    EXPECT_NE(out.find("an empty path names no cgroup2 root"), std::string::npos) << command << "\n" << out;
  }
}

TEST(ProbeTrigger, TriesThePolicysTriggerNotAFixedOne) {
  Fixture fx;
  fx.write("proc/pressure/memory",
           "some avg10=0.00 avg60=0.00 avg300=0.00 total=0\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n");
  fx.write("cg/cgroup.controllers", "memory\n");
  const Paths paths{fx.path("proc"), fx.path("cg")};
  const std::string shipped = describe(probe(paths));
  EXPECT_NE(shipped.find("psi_triggers: no, pressure is read every sample instead (some 300000 2000000 on " +
                         fx.path("proc") + "/pressure/memory: "),
            std::string::npos)
      << "the default policy's trigger: 300 ms in 2 s\n"
      << shipped;
  policies::PressureSettings pressure;
  pressure.stall = std::chrono::milliseconds(500);
  pressure.window = std::chrono::seconds(4);
  const Capabilities c = probe(paths, machineTrigger(pressure));
  EXPECT_FALSE(c.psiTriggers);
  EXPECT_EQ(c.psiTrigger, "some 500000 4000000 on " + fx.path("proc") + "/pressure/memory");
  EXPECT_EQ(fx.read("proc/pressure/memory").find("some 500000"), std::string::npos)
      << "nothing written to a plain file";
}

TEST(ProbeTrigger, TheCommandTakesItFromThePolicyFile) {
  Fixture fx;
  fx.write("proc/pressure/memory", "some avg10=0.00 avg60=0.00 avg300=0.00 total=0\n");
  fx.write("cg/cgroup.controllers", "memory\n");
  fx.write("policy.yaml", "pressure:\n  stall: 250ms\n  window: 6s\n");
  auto [code, out] = runCommand({RECLAIMD_BINARY, "probe", "--proc-root", fx.path("proc"), "--cgroup-root",
                                 fx.path("cg"), "--config", fx.path("policy.yaml")});
  EXPECT_NE(out.find("psi_triggers: no, pressure is read every sample instead (some 250000 6000000 on "),
            std::string::npos)
      << "exit " << code << "\n"
      << out;
}

}  // namespace
}  // namespace reclaimd::controller

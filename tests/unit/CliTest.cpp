// The command line, run as the real binary: check-config, probe, help, version and usage errors.
// (The daemon's runs are in DaemonTest; --explain in ExplainTest.)
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "tests/unit/Fixture.h"
#include "tests/unit/Process.h"
#include "tests/unit/SimFiles.h"

namespace reclaimd::testing {
namespace {

TEST(Cli, CheckConfig) {
  Fixture fx;
  fx.write("good.yaml", "mode: dropcache\n");
  fx.write("bad.yaml", "mode: gradual\nreclaim:\n  flor: 1G\n");
  auto [okCode, okOut] = runCommand({RECLAIMD_BINARY, "check-config", fx.path("good.yaml")});
  EXPECT_EQ(okCode, 0) << okOut;
  EXPECT_NE(okOut.find("valid"), std::string::npos);
  auto [badCode, badOut] = runCommand({RECLAIMD_BINARY, "check-config", fx.path("bad.yaml")});
  EXPECT_EQ(badCode, 78);
  EXPECT_NE(badOut.find("bad.yaml:3:3: reclaim.flor: unknown key"), std::string::npos) << badOut;
}

TEST(Cli, CheckConfigRefusesYamlThatMakesTheReaderLoop) {
  Fixture fx;
  fx.write("loop.yaml", kRunawayYaml);
  // Unbounded, check-config would never return (runCommand kills it after 30 s: code -1).
  auto [code, out] = runCommand({RECLAIMD_BINARY, "check-config", fx.path("loop.yaml")});
  EXPECT_EQ(code, 78) << out;
  EXPECT_TRUE(refusedAsRunaway(out, fx.path("loop.yaml"))) << out;
  fx.write("main.yaml", "mode: gradual\n");
  fx.write("main.d/20-loop.yaml", kRunawayYaml);
  auto [dropInCode, dropInOut] = runCommand({RECLAIMD_BINARY, "check-config", fx.path("main.yaml")});
  EXPECT_EQ(dropInCode, 78) << dropInOut;
  EXPECT_TRUE(refusedAsRunaway(dropInOut, fx.path("main.d/20-loop.yaml"))) << dropInOut;
}

TEST(Cli, CheckConfigWithAnIgnoredSigchldStillLearnsHowTheCheckEnded) {
  // An ignored SIGCHLD survives exec (bash passes a trapped-empty one on; dash does not): the
  // kernel would reap the policy check's child itself.
  Fixture fx;
  fx.write("good.yaml", "mode: gradual\n");
  const std::string command =
      "trap '' CHLD; exec " + std::string(RECLAIMD_BINARY) + " check-config " + fx.path("good.yaml");
  auto [code, out] = runCommand({"/bin/bash", "-c", command});
  EXPECT_EQ(code, 0) << out;
  EXPECT_NE(out.find("good.yaml: valid"), std::string::npos) << out;
}

TEST(Cli, VersionHelpAndUsage) {
  auto [vCode, vOut] = runCommand({RECLAIMD_BINARY, "--version"});
  EXPECT_EQ(vCode, 0);
  EXPECT_NE(vOut.find("reclaimd "), std::string::npos);
  auto [hCode, hOut] = runCommand({RECLAIMD_BINARY, "--help"});
  EXPECT_EQ(hCode, 0);
  EXPECT_NE(hOut.find("check-config"), std::string::npos);
  auto [uCode, uOut] = runCommand({RECLAIMD_BINARY, "--no-such-flag"});
  EXPECT_EQ(uCode, 64) << uOut;
}

// What `reclaimd ARGS` writes to one stream, the other sent to /dev/null, and its exit code.
std::pair<int, std::string> streamOf(const std::string& args, bool stderrOnly) {
  const std::string redirect = stderrOnly ? " 2>&1 >/dev/null" : " 2>/dev/null";
  return runCommand({"/bin/bash", "-c", "exec " + std::string(RECLAIMD_BINARY) + " " + args + redirect});
}

// A command-line mistake (an unknown option, a missing or bad value) names the program, with the hint
// and the usage exit code; --help and --version are answers: stdout and 0, as before.
TEST(Cli, ParseErrorsNameTheProgramOnStderr) {
  for (const auto& [args, message] : std::vector<std::pair<std::string, std::string>>{
           {"--no-such-flag", "The following argument was not expected: --no-such-flag"},
           {"probe --sys-root", "--sys-root: 1 required DIR missing"},
           {"status --json=maybe", "Could not convert: --json = maybe"},
           {"check-config", "FILE is required"}}) {
    auto [code, err] = streamOf(args, true);
    EXPECT_EQ(code, 64) << args;
    EXPECT_EQ(err, "reclaimd: " + message + "\nRun with --help for more information.\n") << args;
    EXPECT_EQ(streamOf(args, false).second, "") << args;
  }
  auto [helpCode, help] = streamOf("--help", false);
  EXPECT_EQ(helpCode, 0);
  EXPECT_EQ(help.rfind("reclaimd: gives a Linux machine's idle page cache back to its host\n", 0), 0u) << help;
  auto [runHelpCode, runHelp] = streamOf("run --help", false);
  EXPECT_EQ(runHelpCode, 0);
  EXPECT_NE(runHelp.find("--status-socket"), std::string::npos) << runHelp;
  auto [versionCode, version] = streamOf("--version", false);
  EXPECT_EQ(versionCode, 0);
  EXPECT_EQ(version.rfind("reclaimd ", 0), 0u) << version;
  for (const char* answer : {"--help", "run --help", "--version"})
    EXPECT_EQ(streamOf(answer, true).second, "") << answer;
}

// A command that cannot do what it was asked names the program on every line it writes to stderr,
// as a parse error does (a policy file it cannot open too); the errors in a policy file name the
// file and position first, every line of them (FILE:LINE:COLUMN:, as a compiler's, the form
// editors jump to).
TEST(Cli, CommandsThatFailSayWhichProgramOrWhichFile) {
  Fixture fx;
  fx.write("bad.yaml", "trim:\n  percent: 500\nidle:\n  grace: 0s\n");
  fx.write("good.yaml", "mode: gradual\n");
  fx.write("good.d/10-grace.yml", "idle:\n  grace: 1m\n");
  fx.write("recording", "hello world\n");
  const std::string q = "'";
  const std::string program = "reclaimd: ";
  struct Case {
    std::string args;
    int code;
    std::string message;
    std::string first;  // what every line starts with
    std::size_t lines;  // at least
  };
  for (const Case& c : std::vector<Case>{
           {"check-config " + q + fx.path("absent.yaml") + q, 66, "absent.yaml: No such file or directory", program, 1},
           {"probe --config " + q + fx.path("absent.yaml") + q, 66, "absent.yaml: No such file or directory", program,
            1},
           {"check-config " + q + fx.path("bad.yaml") + q, 78, "idle.grace", fx.path("bad.yaml") + ":", 2},
           {"probe --config " + q + fx.path("bad.yaml") + q, 78, "trim.percent", fx.path("bad.yaml") + ":", 2},
           {"check-config " + q + fx.path("good.yaml") + q + " --explain 'a*'", 64, "it has wildcards", program, 1},
           {"check-config " + q + fx.path("good.yaml") + q, 0, "warning: " + fx.path("good.d/10-grace.yml"), program,
            1},
           {"status --socket " + q + fx.path("absent.sock") + q, 69, "the daemon is not running", program, 1},
           {"replay " + q + fx.path("absent") + q, 66, "replay: cannot open", program, 1},
           {"replay " + q + fx.path("recording") + q, 65, "replay: line 1: not a reclaimd recording", program, 1}}) {
    auto [exit, err] = streamOf(c.args, true);
    EXPECT_EQ(exit, c.code) << c.args << "\n" << err;
    EXPECT_NE(err.find(c.message), std::string::npos) << c.args << "\n" << err;
    std::istringstream in(err);
    std::size_t lines = 0;
    for (std::string line; std::getline(in, line); ++lines)
      EXPECT_EQ(line.rfind(c.first, 0), 0u) << c.args << ": " << line;
    EXPECT_GE(lines, c.lines) << c.args << "\n" << err;
  }
}

TEST(Cli, ProbePrintsCapabilitiesAndMode) {
  Fixture fx;
  SimFiles machine(fx);
  auto [code, out] =
      runCommand({RECLAIMD_BINARY, "--proc-root", fx.path("proc"), "--cgroup-root", fx.path("cg"), "probe"});
  EXPECT_EQ(code, 0) << out;
  EXPECT_NE(out.find("effective_mode: gradual (swappiness=0)"), std::string::npos) << out;
  fx.remove("cg/memory.reclaim");
  fx.remove("proc/sys/vm/drop_caches");
  auto [code2, out2] =
      runCommand({RECLAIMD_BINARY, "--proc-root", fx.path("proc"), "--cgroup-root", fx.path("cg"), "probe"});
  EXPECT_EQ(code2, 69) << out2;
}

TEST(Cli, ProbeChoosesTheModeRunWould) {
  Fixture fx;
  SimFiles machine(fx);
  fx.remove("cg/memory.reclaim");  // cgroup v1's memory controller: only drop_caches is left
  const auto probeWith = [&](const std::string& policy) {
    fx.write("policy.yaml", policy);
    return runCommand({RECLAIMD_BINARY, "--proc-root", fx.path("proc"), "--cgroup-root", fx.path("cg"), "probe",
                       "--config", fx.path("policy.yaml")});
  };
  auto [plain, plainOut] = probeWith("mode: gradual\n");
  EXPECT_EQ(plain, 0) << plainOut;
  EXPECT_NE(plainOut.find("effective_mode: dropcache"), std::string::npos) << plainOut;
  // The daemon refuses to fall back where rules protect cgroups (exit 69); probe says the same.
  auto [rules, rulesOut] = probeWith("mode: gradual\nrules:\n  - match: \"db.slice\"\n    floor: 1G\n");
  EXPECT_EQ(rules, 69) << rulesOut;
  EXPECT_NE(rulesOut.find("effective_mode: disabled"), std::string::npos) << rulesOut;
  EXPECT_NE(rulesOut.find("per-cgroup rules cannot fall back to drop_caches"), std::string::npos) << rulesOut;
  // A policy whose only gradual part is a rule asks for gradual, as status says.
  auto [ruleOnly, ruleOnlyOut] = probeWith("mode: disabled\nrules:\n  - match: \"db.slice\"\n    mode: gradual\n");
  EXPECT_EQ(ruleOnly, 69) << ruleOnlyOut;
  EXPECT_NE(ruleOnlyOut.find("requested_mode: gradual"), std::string::npos) << ruleOnlyOut;
}

// A path is bytes: a cgroup root whose name is not UTF-8 is still described, as status does it.
TEST(Cli, ProbeJsonDescribesARootWhosePathIsNotUtf8) {
  Fixture fx;
  SimFiles machine(fx);
  const std::string root = "cg-\xff";
  fx.write(root + "/cgroup.controllers", "cpu io memory pids\n");
  fx.write(root + "/memory.reclaim", "");
  auto [code, out] =
      runCommand({RECLAIMD_BINARY, "--proc-root", fx.path("proc"), "--cgroup-root", fx.path(root), "probe", "--json"});
  EXPECT_EQ(code, 0) << out;
  const auto json = nlohmann::json::parse(out, nullptr, false);
  ASSERT_TRUE(json.is_object()) << out;
  EXPECT_EQ(json.value("cgroup2_root", ""), fx.path("cg-\xEF\xBF\xBD")) << "the byte as U+FFFD";
}

}  // namespace
}  // namespace reclaimd::testing

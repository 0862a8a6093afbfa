// check-config --explain with per-cgroup rules, run as the real binary, and what it says of a cgroup
// absent now. (The rules' behaviour is in EngineRulesTest.)
#include <gtest/gtest.h>

#include <sstream>
#include <string>

#include "controller/Paths.h"
#include "controller/Probe.h"
#include "controller/cli/Commands.h"
#include "tests/unit/Fixture.h"
#include "tests/unit/Process.h"

namespace reclaimd::testing {
namespace {

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
  // The path under the usual mount, as a user copies it from the filesystem, is the same cgroup.
  auto [mounted, mountedOut] = runCommand({RECLAIMD_BINARY, "check-config", fx.path("p.yaml"), "--explain",
                                           "/sys/fs/cgroup/user.slice/session-1.scope", "/sys/fs/cgroup/"});
  EXPECT_EQ(mounted, 0) << mountedOut;
  // The headings name each cgroup from the root (the note on a cgroup absent now names the mount).
  std::istringstream lines(mountedOut);
  for (std::string line; std::getline(lines, line);) {
    if (!line.starts_with("  ")) {
      EXPECT_EQ(line.find("sys/fs"), std::string::npos) << mountedOut;
    }
  }
  EXPECT_NE(mountedOut.find("user.slice/session-1.scope:\n  governed by rule 3"), std::string::npos) << mountedOut;
  auto [bad, badOut] = runCommand({RECLAIMD_BINARY, "check-config", fx.path("p.yaml"), "--explain", "a/../../etc"});
  EXPECT_EQ(bad, 64) << badOut;
}

// A cgroup's path is taken relative to the root the daemon would use, and to the usual mount.
TEST(CliRules, ExplainTakesPathsUnderTheCgroupRoot) {
  for (const std::string root : {"/sys/fs/cgroup", "/sys/fs/cgroup/unified", ""}) {
    EXPECT_EQ(controller::cgroupRelative("/system.slice/", root), "system.slice") << root;
    EXPECT_EQ(controller::cgroupRelative("/sys/fs/cgroup/system.slice", root), "system.slice") << root;
    EXPECT_EQ(controller::cgroupRelative("/sys/fs/cgroup", root), "") << root;
    EXPECT_EQ(controller::cgroupRelative("/sys/fs/cgroupx/a", root), "sys/fs/cgroupx/a") << root;
  }
  EXPECT_EQ(controller::cgroupRelative("/sys/fs/cgroup/unified/system.slice", "/sys/fs/cgroup/unified"),
            "system.slice")
      << "a hybrid layout's cgroup2 root";
  EXPECT_EQ(controller::cgroupRelative("/sys/fs/cgroup/unified", "/sys/fs/cgroup/unified"), "");
  EXPECT_EQ(controller::cgroupRelative("/sys/fs/cgroup/unified/a", "/sys/fs/cgroup"), "unified/a")
      << "where cgroup2 is mounted at /sys/fs/cgroup, unified is a cgroup like any";
}

// A cgroup that is not there now is still explained (rules apply to cgroups that appear later), with
// one line saying so, found where the daemon finds its root; without cgroup2 nothing is claimed.
TEST(CliRules, ExplainSaysWhenTheCgroupDoesNotExistNow) {
  Fixture fx;
  fx.mkdir("cg/system.slice/cron.service");
  fx.write("cg/cgroup.procs", "");
  fx.write("proc/self/mountinfo", "30 25 0:26 / " + fx.path("cg") + " rw - cgroup2 cgroup2 rw\n");
  std::string problem;
  const std::string root = controller::findCgroupRoot(controller::Paths{fx.path("proc"), "", ""}, problem);
  ASSERT_EQ(root, fx.path("cg")) << problem;
  const std::string absent =
      "  no such cgroup exists now under " + root + "; the above is what governs it if it appears\n";
  EXPECT_EQ(controller::absentCgroupNote(root, "system.slice/cron.servce"), absent);
  EXPECT_EQ(controller::absentCgroupNote(root, "system.slice/cron.service/cgroup.procs"), absent)
      << "a file is no cgroup";
  EXPECT_EQ(controller::absentCgroupNote(root, "cgroup.procs/x"), absent);
  EXPECT_EQ(controller::absentCgroupNote(root, "system.slice/cron.service"), "");
  EXPECT_EQ(controller::absentCgroupNote(root, ""), "") << "the root itself";
  fx.write("proc/self/mountinfo", "22 1 254:0 / / rw - ext4 /dev/vda rw\n");
  EXPECT_EQ(controller::findCgroupRoot(controller::Paths{fx.path("proc"), "", ""}, problem), "");
  EXPECT_EQ(controller::absentCgroupNote("", "system.slice/cron.servce"), "") << "no cgroup2, no claim";

  // The binary looks where the daemon would on this machine, whichever it is.
  fx.write("p.yaml", kRules);
  const std::string machineRoot = controller::findCgroupRoot(controller::Paths{}, problem);
  auto [code, out] =
      runCommand({RECLAIMD_BINARY, "check-config", fx.path("p.yaml"), "--explain", "no-such.slice/typo.scope"});
  EXPECT_EQ(code, 0) << out;
  EXPECT_EQ(out.rfind("no-such.slice/typo.scope:\n  no rule matches it or its ancestors", 0), 0u) << out;
  if (machineRoot.empty()) {
    EXPECT_EQ(out.find("no such cgroup"), std::string::npos) << out;
  } else {
    EXPECT_NE(out.find("\n  no such cgroup exists now under " + machineRoot + ";"), std::string::npos) << out;
  }
}

}  // namespace
}  // namespace reclaimd::testing

// check-config --explain with per-cgroup rules, run as the real binary. (The rules' behaviour is
// in EngineRulesTest.)
#include <gtest/gtest.h>
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
  EXPECT_EQ(mountedOut.find("sys/fs"), std::string::npos) << mountedOut;
  EXPECT_NE(mountedOut.find("user.slice/session-1.scope:\n  governed by rule 3"), std::string::npos) << mountedOut;
  auto [bad, badOut] = runCommand({RECLAIMD_BINARY, "check-config", fx.path("p.yaml"), "--explain", "a/../../etc"});
  EXPECT_EQ(bad, 64) << badOut;
}

}  // namespace
}  // namespace reclaimd::testing

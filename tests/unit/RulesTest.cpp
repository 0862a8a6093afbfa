// Per-cgroup rules: patterns, precedence, explain, and the loader's rule errors.
#include <gtest/gtest.h>

#include "policies/Loader.h"
#include "policies/Pattern.h"
#include "policies/Rules.h"

namespace reclaimd::policies {
namespace {

using namespace std::chrono_literals;

Pattern pat(const char* text) {
  auto p = Pattern::parse(text);
  EXPECT_TRUE(p.ok()) << text << ": " << (p.ok() ? "" : p.error().message());
  return p.ok() ? *p : Pattern{};
}

struct MatchCase {
  const char* pattern;
  const char* path;
  bool matches;
};

class PatternTest : public ::testing::TestWithParam<MatchCase> {};

TEST_P(PatternTest, Matches) {
  EXPECT_EQ(pat(GetParam().pattern).matches(GetParam().path), GetParam().matches)
      << GetParam().pattern << " vs \"" << GetParam().path << "\"";
}

INSTANTIATE_TEST_SUITE_P(
    Table, PatternTest,
    ::testing::Values(
        MatchCase{"system.slice", "system.slice", true}, MatchCase{"system.slice", "system.slice/cron.service", false},
        MatchCase{"system.slice", "", false}, MatchCase{"system.slice/*", "system.slice/cron.service", true},
        MatchCase{"system.slice/*", "system.slice", false}, MatchCase{"system.slice/*", "system.slice/a/b", false},
        MatchCase{"user.slice/**", "user.slice", true},
        MatchCase{"user.slice/**", "user.slice/user-1000.slice/session-1.scope", true},
        MatchCase{"user.slice/**", "user.slicex", false}, MatchCase{"**", "", true}, MatchCase{"**", "a/b/c", true},
        MatchCase{"docker/*", "docker/0123abcd", true},
        MatchCase{"system.slice/docker-*.scope", "system.slice/docker-ab12.scope", true},
        MatchCase{"system.slice/docker-*.scope", "system.slice/containerd.service", false},
        MatchCase{"**/session-*.scope", "user.slice/user-1000.slice/session-3.scope", true},
        MatchCase{"*/*.service", "system.slice/cron.service", true},
        MatchCase{"user-100?.slice", "user-1000.slice", true}, MatchCase{"[ab]*", "build.slice", true},
        MatchCase{"[ab]*", "cache.slice", false}));

TEST(Pattern, SaysWhetherAnythingBelowAPathCouldMatch) {
  struct Case {
    const char* pattern;
    const char* path;
    bool below;
  };
  for (const Case& c : std::vector<Case>{
           {"kubepods.slice/*", "", true},
           {"kubepods.slice/*", "kubepods.slice", true},
           {"kubepods.slice/*", "kubepods.slice/pod1", false},  // matched: nothing deeper can
           {"kubepods.slice/*", "system.slice", false},
           {"system.slice", "system.slice", false},
           {"user.slice/**/*.scope", "user.slice/user-1000.slice", true},
           {"user.slice/**", "user.slice/a/b/c", true},
           {"**", "a/b", true},
           {"**/x.scope", "a/x.scope", true},  // a/x.scope/x.scope
           {"a/b/c", "a/b", true},
           {"a/b/c", "a/x", false},
       }) {
    auto p = policies::Pattern::parse(c.pattern);
    ASSERT_TRUE(p.ok());
    EXPECT_EQ(p->mayMatchBelow(policies::splitPath(c.path)), c.below) << c.pattern << " below " << c.path;
  }
}

TEST(Pattern, RejectsPathsThatLeaveTheRoot) {
  for (const char* bad : {"", "/system.slice", "../etc", "a/../../b", "./a", "a//b", "a/", "a/**b", "a**/b"}) {
    auto p = Pattern::parse(bad);
    EXPECT_FALSE(p.ok()) << "\"" << bad << "\" was accepted";
  }
  auto abs = Pattern::parse("/system.slice");
  ASSERT_FALSE(abs.ok());
  EXPECT_NE(abs.error().message().find("relative to the cgroup root"), std::string::npos);
  auto up = Pattern::parse("a/../b");
  ASSERT_FALSE(up.ok());
  EXPECT_NE(up.error().message().find("never leave the cgroup root"), std::string::npos);
}

struct PrecedenceCase {
  std::vector<const char*> patterns;
  const char* path;
  int winner;  // index, -1 for none
};

class PrecedenceTest : public ::testing::TestWithParam<PrecedenceCase> {};

TEST_P(PrecedenceTest, MostSpecificWins) {
  std::vector<Rule> rs;
  int line = 1;
  for (const char* p : GetParam().patterns) {
    Rule r;
    r.pattern = pat(p);
    r.line = line++;
    rs.push_back(r);
  }
  EXPECT_EQ(governingRule(rs, GetParam().path), GetParam().winner) << GetParam().path;
  // Order in the file only breaks exact ties: reversing the list keeps the same winner pattern.
  std::vector<Rule> reversed(rs.rbegin(), rs.rend());
  const int w = governingRule(reversed, GetParam().path);
  if (GetParam().winner >= 0) {
    ASSERT_GE(w, 0);
    const auto& a = rs[static_cast<std::size_t>(GetParam().winner)].pattern.specificity();
    const auto& b = reversed[static_cast<std::size_t>(w)].pattern.specificity();
    EXPECT_EQ(a, b);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Table, PrecedenceTest,
    ::testing::Values(
        PrecedenceCase{{"**", "user.slice/**"}, "user.slice/user-1000.slice", 1},
        PrecedenceCase{{"user.slice/**", "user.slice/user-1000.slice/*"}, "user.slice/user-1000.slice/a.scope", 1},
        PrecedenceCase{{"system.slice/*", "system.slice/docker-*.scope"}, "system.slice/docker-1.scope", 1},
        PrecedenceCase{{"system.slice/*", "system.slice/cron.service"}, "system.slice/cron.service", 1},
        PrecedenceCase{{"system.slice/**", "system.slice/*"}, "system.slice/cron.service", 1},
        PrecedenceCase{{"*/cron.service", "system.slice/*"}, "system.slice/cron.service", 0},  // tie: first
        PrecedenceCase{{"build.slice"}, "system.slice", -1}, PrecedenceCase{{"**", "build.slice/**"}, "", 0}));

TEST(Rules, MatchingRulesAreRankedAndExplained) {
  auto loaded = parsePolicy(R"(rules:
  - match: "**"
    mode: disabled
  - match: system.slice/*
    floor: 64M
  - match: system.slice/cron.service
    idle_source: cgroup
)",
                            "p.yaml");
  ASSERT_TRUE(loaded.ok()) << loaded.error().message();
  EXPECT_EQ(matchingRules(loaded->rules, "system.slice/cron.service"), (std::vector<int>{2, 1, 0}));
  const std::string text = explain(*loaded, "system.slice/cron.service");
  EXPECT_NE(text.find("governed by rule 3 (line 6, match \"system.slice/cron.service\")"), std::string::npos) << text;
  EXPECT_NE(
      text.find("also matches rule 2 (line 4, match \"system.slice/*\"), outranked: more literal components (2 > 1)"),
      std::string::npos)
      << text;
  EXPECT_NE(text.find("idle source cgroup"), std::string::npos) << text;
  EXPECT_NE(explain(*loaded, "init.scope").find("governed by rule 1"), std::string::npos);
  auto none = parsePolicy("rules:\n  - match: build.slice\n", "q.yaml");
  ASSERT_TRUE(none.ok());
  EXPECT_NE(explain(*none, "system.slice").find("no rule matches it or its ancestors"), std::string::npos);
  const std::string inherited = explain(*none, "build.slice/job-7.scope");
  EXPECT_NE(inherited.find("inherits rule 1 (line 2, match \"build.slice\") from build.slice"), std::string::npos)
      << inherited;
  EXPECT_NE(inherited.find("trimmed while busy: yes"), std::string::npos) << inherited;
  EXPECT_NE(inherited.find("floors: this cgroup keeps 16MiB; the machine keeps 128MiB (reclaim.floor) in all"),
            std::string::npos)
      << inherited;
  auto off = parsePolicy("rules:\n  - match: db.slice\n    trim: false\n", "r.yaml");
  ASSERT_TRUE(off.ok()) << off.error().message();
  EXPECT_NE(explain(*off, "db.slice").find("trimmed while busy: no"), std::string::npos);
}

TEST(Rules, ExplainSaysWhereACgroupIsJudgedByItsOwnCpu) {
  auto none = parsePolicy("mode: gradual\n", "p.yaml");
  ASSERT_TRUE(none.ok());
  const std::string unit = explain(*none, "user.slice/user-1000.slice/session-2.scope");
  EXPECT_NE(unit.find("judged by its own CPU (idle.units): while the machine is busy, once its own CPU has stayed at "
                      "or under 0.5% of one CPU for 120s it is reclaimed to 16MiB (reclaim.cgroup_floor)"),
            std::string::npos)
      << unit;
  // Slices and plain cgroups too (a machine without systemd has only those); the root is the
  // machine's.
  EXPECT_NE(explain(*none, "user.slice").find("judged by its own CPU"), std::string::npos);
  EXPECT_NE(explain(*none, "work").find("judged by its own CPU"), std::string::npos);
  EXPECT_EQ(explain(*none, "").find("judged by its own CPU"), std::string::npos);
  auto off = parsePolicy("idle:\n  units: false\n", "q.yaml");
  ASSERT_TRUE(off.ok());
  EXPECT_EQ(explain(*off, "system.slice/cron.service").find("judged by its own CPU"), std::string::npos);
  auto ruled = parsePolicy("rules:\n  - match: system.slice\n", "r.yaml");
  ASSERT_TRUE(ruled.ok());
  EXPECT_EQ(explain(*ruled, "system.slice/cron.service").find("judged by its own CPU"), std::string::npos)
      << "a rule governs it: the rule decides";
}

TEST(Rules, RulesInheritTheMachineSettings) {
  auto p = parsePolicy(R"(idle:
  grace: 30s
reclaim:
  step_max: 512M
  cgroup_floor: 8M
rules:
  - match: build.slice
  - match: batch.slice
    floor: 1G
    grace: 5m
    idle_source: both
    mode: disabled
)",
                       "p.yaml");
  ASSERT_TRUE(p.ok()) << p.error().message();
  const Governance build = p->governance(0, false);
  EXPECT_EQ(build.mode, Mode::Gradual);
  EXPECT_EQ(build.floor, 8 * kMiB);
  EXPECT_EQ(build.idle.grace, 30s);
  EXPECT_EQ(build.steps.stepMax, 512 * kMiB);
  EXPECT_EQ(build.idleSource, IdleSource::System);
  const Governance batch = p->governance(1, false);
  EXPECT_EQ(batch.mode, Mode::Disabled);
  EXPECT_EQ(batch.floor, 1 * kGiB);
  EXPECT_EQ(batch.idle.grace, 300s);
  EXPECT_EQ(batch.idleSource, IdleSource::Both);
  EXPECT_EQ(p->governance(-1, true).floor, 128 * kMiB) << "the machine floor at the root";
  EXPECT_EQ(p->governance(-1, false).floor, 8 * kMiB) << "cgroup_floor below it";
  EXPECT_EQ(p->reclaimMode(), Mode::Gradual);
}

TEST(Rules, ReclaimModeCountsRules) {
  auto p = parsePolicy("mode: disabled\nrules:\n  - match: build.slice\n", "p.yaml");
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->reclaimMode(), Mode::Gradual) << "a gradual rule under a disabled machine";
  auto q = parsePolicy("mode: disabled\nrules:\n  - match: build.slice\n    mode: disabled\n", "q.yaml");
  ASSERT_TRUE(q.ok());
  EXPECT_EQ(q->reclaimMode(), Mode::Disabled);
}

struct RuleErrorCase {
  const char* name;
  const char* yaml;
  const char* expected;
};

class RuleErrorTest : public ::testing::TestWithParam<RuleErrorCase> {};

TEST_P(RuleErrorTest, NamesThePlace) {
  auto p = parsePolicy(GetParam().yaml, "r.yaml");
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.error().message().find(GetParam().expected), std::string::npos) << p.error().message();
}

INSTANTIATE_TEST_SUITE_P(
    Table, RuleErrorTest,
    ::testing::Values(
        RuleErrorCase{"not_a_list", "rules: build.slice\n", "r.yaml:1:8: rules: expected a list"},
        RuleErrorCase{"no_match", "rules:\n  - mode: disabled\n", "r.yaml:2:5: rules[1]: a rule needs \"match\""},
        RuleErrorCase{"dotdot", "rules:\n  - match: ../etc\n", "r.yaml:2:12: rules[1].match: \"../etc\""},
        RuleErrorCase{"absolute", "rules:\n  - match: /sys/fs/cgroup/x\n", "relative to the cgroup root"},
        RuleErrorCase{"unknown_key", "rules:\n  - match: a\n    flor: 1G\n", "r.yaml:3:5: rules[1].flor: unknown key"},
        RuleErrorCase{"dropcache_rule", "rules:\n  - match: a\n    mode: dropcache\n",
                      "rules[1].mode: dropcache drops every cgroup's cache"},
        RuleErrorCase{"dropcache_machine", "mode: dropcache\nrules:\n  - match: a\n",
                      "rules: per-cgroup rules need mode gradual or disabled"},
        RuleErrorCase{"bad_source", "rules:\n  - match: a\n    idle_source: gpu\n",
                      "r.yaml:3:18: rules[1].idle_source: expected system, cgroup or both"},
        RuleErrorCase{"duplicate", "rules:\n  - match: a\n  - match: a\n",
                      "r.yaml:3:12: rules[2].match: \"a\" is already matched by the rule at line 2"},
        RuleErrorCase{"rule_not_map", "rules:\n  - a\n", "r.yaml:2:5: rules[1]: expected a rule"},
        RuleErrorCase{"step_order", "rules:\n  - match: a\n    step_min: 1G\n    step_max: 1M\n",
                      "r.yaml:4:15: rules[1].step_max: must not be smaller than rules[1].step_min (1G)"}),
    [](const auto& tc) { return std::string(tc.param.name); });

}  // namespace
}  // namespace reclaimd::policies

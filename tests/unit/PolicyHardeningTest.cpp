// Hostile and awkward policies: matching cost, duplicates, limits, file kinds, YAML edge cases,
// positions of errors between keys, and drop-ins.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <random>

#include "policies/Loader.h"
#include "policies/Pattern.h"
#include "policies/Rules.h"
#include "tests/unit/Fixture.h"

namespace reclaimd::policies {
namespace {

using namespace std::chrono_literals;

std::string repeat(const std::string& part, int times, const std::string& sep) {
  std::string out;
  for (int i = 0; i < times; ++i)
    out += (i ? sep : "") + part;
  return out;
}

std::size_t comparisons(const std::string& pattern, const std::string& path, bool* matched = nullptr) {
  auto p = Pattern::parse(pattern);
  EXPECT_TRUE(p.ok()) << (p.ok() ? "" : p.error().message());
  std::size_t n = 0;
  const bool m = p->matches(splitPath(path), &n);
  if (matched) *matched = m;
  return n;
}

TEST(PatternCost, ManyAnyDepthComponentsAreLinear) {
  // 30 "**" between literal components on a 12-deep path that does not match: the backtracking
  // matcher tried every way to split the path among them and never finished.
  const std::string pattern = repeat("**/a", 30, "/") + "/b";
  const std::string path = repeat("a", 12, "/");
  bool matched = true;
  const std::size_t n = comparisons(pattern, path, &matched);
  EXPECT_FALSE(matched);
  EXPECT_LE(n, 61u * 12u) << "at most components x depth";
}

TEST(PatternCost, DeepPathIsLinear) {
  const std::string path = "user.slice/" + repeat("a", 398, "/") + "/x.scope";  // 400 deep
  bool matched = false;
  EXPECT_LE(comparisons("user.slice/**/**/**/x.scope", path, &matched), 4u * 400u);
  EXPECT_TRUE(matched);
  EXPECT_LE(comparisons("user.slice/**/a/**/a/**/x.scope", path, &matched), 7u * 400u);
  EXPECT_TRUE(matched);
  EXPECT_LE(comparisons("user.slice/**/a/**/a/**/y.scope", path, &matched), 7u * 400u);
  EXPECT_FALSE(matched);
}

TEST(PatternCost, ExplainAtDepth400) {
  auto policy = parsePolicy("rules:\n  - match: \"user.slice/**/**/**/x.scope\"\n  - match: \"**/a/**/b\"\n", "p.yaml");
  ASSERT_TRUE(policy.ok()) << policy.error().message();
  const std::string deep = "user.slice/" + repeat("a", 398, "/") + "/y.scope";
  EXPECT_NE(explain(*policy, deep).find("no rule matches it or its ancestors"), std::string::npos);
  EXPECT_NE(explain(*policy, deep.substr(0, deep.size() - 7) + "x.scope").find("governed by rule 1"),
            std::string::npos);
}

TEST(PatternCost, TooManyComponentsIsAnError) {
  auto p = Pattern::parse(repeat("a", 64, "/"));
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.error().message().find("more than 63 components"), std::string::npos) << p.error().message();
  EXPECT_TRUE(Pattern::parse(repeat("a", 63, "/")).ok());
  EXPECT_FALSE(Pattern::parse(std::string(256, 'a')).ok()) << "longer than NAME_MAX";
}

// Property: an exact pattern matches its own text, whatever bytes its names hold (backslashes
// included: systemd writes '-' as "\x2d").
TEST(PatternProperty, ExactPatternMatchesItsOwnText) {
  std::mt19937 rng(12345);
  const std::string alphabet = "abcxyz019-_.@:\\ \x7f\xc3\xa9";
  for (int round = 0; round < 5000; ++round) {
    std::string text;
    const int depth = 1 + static_cast<int>(rng() % 8);
    for (int d = 0; d < depth; ++d) {
      std::string name;
      const int len = 1 + static_cast<int>(rng() % 12);
      for (int i = 0; i < len; ++i)
        name += alphabet[rng() % alphabet.size()];
      if (name == "." || name == "..") name += "x";
      text += (d ? "/" : "") + name;
    }
    auto p = Pattern::parse(text);
    ASSERT_TRUE(p.ok()) << text << ": " << p.error().message();
    ASSERT_TRUE(p->exact()) << text;
    ASSERT_TRUE(p->matches(text)) << "\"" << text << "\" does not match itself";
    ASSERT_TRUE(Pattern::parse(text + "/**")->matches(text)) << text;
  }
}

TEST(PatternLiteral, BackslashIsPartOfTheName) {
  auto exact = Pattern::parse("system.slice/system-systemd\\x2dfsck.slice");
  ASSERT_TRUE(exact.ok());
  EXPECT_TRUE(exact->matches("system.slice/system-systemd\\x2dfsck.slice"));
  EXPECT_FALSE(exact->matches("system.slice/system-systemdx2dfsck.slice")) << "\\x is not an escape";
  auto glob = Pattern::parse("system.slice/system-systemd\\x2d*.slice");
  ASSERT_TRUE(glob.ok());
  EXPECT_TRUE(glob->matches("system.slice/system-systemd\\x2dfsck.slice"));
  EXPECT_FALSE(glob->matches("system.slice/system-systemdx2dfsck.slice"));
  auto star = Pattern::parse("a[*]b");
  ASSERT_TRUE(star.ok());
  EXPECT_TRUE(star->matches("a*b"));
  EXPECT_FALSE(star->matches("axb"));
}

std::string rules(int count, bool distinct) {
  std::string text = "rules:\n";
  for (int i = 0; i < count; ++i)
    text += "  - match: " + (distinct ? "svc-" + std::to_string(i) + ".service" : std::string("a")) + "\n";
  return text;
}

TEST(PolicyLimits, OneErrorPerDuplicateNamingTheFirst) {
  auto p = parsePolicy(rules(5, false), "d.yaml");
  ASSERT_FALSE(p.ok());
  const std::string m = p.error().message();
  std::size_t errors = 0;
  for (std::size_t at = 0; (at = m.find("already matched", at)) != std::string::npos; ++at)
    ++errors;
  EXPECT_EQ(errors, 4u) << m;
  EXPECT_NE(m.find("d.yaml:6:12: rules[5].match: \"a\" is already matched by the rule at line 2"), std::string::npos)
      << m;
  auto same = parsePolicy("rules:\n  - match: a/**\n  - match: a/**/**\n", "n.yaml");
  ASSERT_FALSE(same.ok());
  EXPECT_NE(same.error().message().find("already matched by the rule at line 2 (\"a/**\")"), std::string::npos)
      << same.error().message();
}

TEST(PolicyLimits, RuleCountIsLimited) {
  EXPECT_TRUE(parsePolicy(rules(static_cast<int>(kMaxRules), true), "ok.yaml").ok());
  auto p = parsePolicy(rules(static_cast<int>(kMaxRules) + 1, true), "big.yaml");
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.error().message().find("big.yaml:2:3: rules: 1001 rules so far, more than the 1000 allowed"),
            std::string::npos)
      << p.error().message().substr(0, 300);
}

TEST(PolicyLimits, AliasesOfOneRuleAreRefusedNotAnAbort) {
  std::string text = "rules:\n  - &r {match: a}\n";
  for (int i = 0; i < 20000; ++i)
    text += "  - *r\n";
  auto p = parsePolicy(text, "alias.yaml");
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.error().message().find("20001 rules so far, more than the 1000 allowed"), std::string::npos);
  EXPECT_LT(p.error().message().size(), 500u) << "one error, not one per copy";
}

TEST(PolicyLimits, SizeIsLimited) {
  std::string text = "# " + std::string(kMaxPolicyBytes, 'x') + "\n";
  auto p = parsePolicy(text, "huge.yaml");
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.error().message().find("huge.yaml: 1048579 bytes of policy, more than the 1MiB allowed"),
            std::string::npos)
      << p.error().message();
  testing::Fixture fx;
  fx.write("huge.yaml", text);
  auto file = loadPolicyFile(fx.path("huge.yaml"));
  ASSERT_FALSE(file.ok());
  EXPECT_NE(file.error().message().find("larger than the 1MiB a policy may be"), std::string::npos);
}

TEST(PolicyYaml, DeepNestingSaysSo) {
  const std::string text = "idle: " + std::string(600, '[') + std::string(600, ']') + "\n";
  auto p = parsePolicy(text, "deep.yaml");
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.error().message().find("deep.yaml:1:"), std::string::npos) << p.error().message();
  EXPECT_NE(p.error().message().find("nested too deeply"), std::string::npos) << p.error().message();
}

TEST(PolicyYaml, SecondDocumentIsAnError) {
  auto p = parsePolicy("mode: gradual\n---\nmode: disabled\n", "two.yaml");
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.error().message().find("two.yaml:3:1: a second YAML document"), std::string::npos) << p.error().message();
  EXPECT_TRUE(parsePolicy("---\nmode: disabled\n", "one.yaml").ok()) << "a leading --- is one document";
}

TEST(PolicyYaml, AbsurdThresholdsAreRejected) {
  for (const char* bad : {"1e-320", "0.0001", "nan", "inf", "-1"}) {
    auto p = parsePolicy(std::string("idle:\n  threshold_percent: ") + bad + "\n", "t.yaml");
    ASSERT_FALSE(p.ok()) << bad;
    EXPECT_NE(p.error().message().find("must be between 0.001 and 100"), std::string::npos) << p.error().message();
  }
  auto low = parsePolicy("idle:\n  threshold_percent: 0.001\n", "t.yaml");
  ASSERT_TRUE(low.ok()) << low.error().message();
}

struct BlameCase {
  const char* name;
  const char* yaml;
  const char* expected;
};

class BlameTest : public ::testing::TestWithParam<BlameCase> {};

TEST_P(BlameTest, PointsAtTheKeyTheUserWrote) {
  auto p = parsePolicy(GetParam().yaml, "b.yaml");
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.error().message().find(GetParam().expected), std::string::npos) << p.error().message();
}

INSTANTIATE_TEST_SUITE_P(
    Table, BlameTest,
    ::testing::Values(
        BlameCase{"grace_alone", "idle: {grace: 7s}\n",
                  "b.yaml:1:15: idle.grace: must not be shorter than idle.interval (10s, its default)"},
        BlameCase{"sample_alone", "idle:\n  interval: 1s\n  sample_period: 2s\n",
                  "b.yaml:3:18: idle.sample_period: must not be longer than idle.interval (1s)"},
        BlameCase{"step_min_alone", "reclaim:\n  step_min: 2G\n",
                  "b.yaml:2:13: reclaim.step_min: must not be larger than reclaim.step_max (1G, its default)"},
        BlameCase{"window_alone", "pressure:\n  window: 500ms\n  stall: 600ms\n",
                  "b.yaml:3:10: pressure.stall: must not be longer than pressure.window (500ms)"},
        BlameCase{"rule_grace", "rules:\n  - match: a\n    grace: 5s\n",
                  "b.yaml:3:12: rules[1].grace: must not be shorter than idle.interval (10s, the machine's)"},
        BlameCase{"rule_window", "pressure: {stall: 1s}\nrules:\n  - match: a\n    pressure: {window: 500ms}\n",
                  "rules[1].pressure.window: must not be shorter than pressure.stall (1s, the machine's)"}),
    [](const auto& tc) { return std::string(tc.param.name); });

TEST(PolicyFile, FifoIsRefusedWithoutBlocking) {
  testing::Fixture fx;
  ASSERT_EQ(::mkfifo(fx.path("fifo.yaml").c_str(), 0600), 0);
  auto p = loadPolicyFile(fx.path("fifo.yaml"));  // a plain open would block forever
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.error().message().find("a FIFO, not a regular file"), std::string::npos) << p.error().message();
  fx.mkdir("dir.yaml");
  auto d = loadPolicyFile(fx.path("dir.yaml"));
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.error().message().find("a directory, not a regular file"), std::string::npos) << d.error().message();
}

TEST(PolicyFile, SymlinksAreFollowed) {
  // A Kubernetes ConfigMap volume: policy.yaml -> ..data/policy.yaml -> ..2026_11_30/policy.yaml.
  testing::Fixture fx;
  fx.write("..2026_11_30/policy.yaml", "mode: disabled\n");
  ASSERT_EQ(::symlink("..2026_11_30", fx.path("..data").c_str()), 0);
  ASSERT_EQ(::symlink("..data/policy.yaml", fx.path("policy.yaml").c_str()), 0);
  auto p = loadPolicyFile(fx.path("policy.yaml"));
  ASSERT_TRUE(p.ok()) << p.error().message();
  EXPECT_EQ(p->mode, Mode::Disabled);
}

TEST(PolicyDropIns, MergedInLexicalOrder) {
  testing::Fixture fx;
  fx.write("policy.yaml", "idle:\n  grace: 1m\n  interval: 5s\nrules:\n  - match: a.slice\n");
  fx.write("policy.d/20-late.yaml", "idle:\n  grace: 3m\nrules:\n  - match: c.slice\n");
  fx.write("policy.d/10-early.yaml", "idle:\n  grace: 2m\nreclaim:\n  floor: 64M\nrules:\n  - match: b.slice\n");
  fx.write("policy.d/README", "not yaml: [");
  fx.write("policy.d/.30-hidden.yaml", "not yaml: [");
  EXPECT_EQ(dropInDirectory(fx.path("policy.yaml")), fx.path("policy.d"));
  auto p = loadPolicyFile(fx.path("policy.yaml"));
  ASSERT_TRUE(p.ok()) << p.error().message();
  EXPECT_EQ(p->idle.grace, 3min) << "the last drop-in wins";
  EXPECT_EQ(p->idle.interval, 5s) << "keys a drop-in does not name stay";
  EXPECT_EQ(p->reclaim.floor, 64 * kMiB);
  ASSERT_EQ(p->rules.size(), 3u);
  EXPECT_EQ(p->rules[0].pattern.text(), "a.slice");
  EXPECT_EQ(p->rules[1].pattern.text(), "b.slice");
  EXPECT_EQ(p->rules[2].pattern.text(), "c.slice");
  EXPECT_EQ(p->rules[0].idle.grace, 3min) << "rules inherit the merged settings";
  EXPECT_NE(explain(*p, "c.slice").find("rule 3 (" + fx.path("policy.d/20-late.yaml") + " line 4"), std::string::npos)
      << explain(*p, "c.slice");
}

TEST(PolicyDropIns, ErrorsNameTheDropIn) {
  testing::Fixture fx;
  fx.write("policy.yaml", "idle:\n  interval: 5s\nrules:\n  - match: a.slice\n");
  fx.write("policy.d/10-x.yaml", "idle:\n  grace: 2s\nrules:\n  - match: a.slice\n  - match: b\n    flor: 1G\n");
  auto p = loadPolicyFile(fx.path("policy.yaml"));
  ASSERT_FALSE(p.ok());
  const std::string m = p.error().message();
  const std::string dropIn = fx.path("policy.d/10-x.yaml");
  EXPECT_NE(m.find(dropIn + ":2:10: idle.grace: must not be shorter than idle.interval (5s)"), std::string::npos) << m;
  EXPECT_NE(m.find(dropIn + ":4:12: rules[1].match: \"a.slice\" is already matched by the rule at " +
                   fx.path("policy.yaml") + " line 4"),
            std::string::npos)
      << m;
  EXPECT_NE(m.find(dropIn + ":6:5: rules[2].flor: unknown key"), std::string::npos) << m;
}

}  // namespace
}  // namespace reclaimd::policies

namespace reclaimd::policies {
namespace {

// fuzz_policy found 8 bytes on which yaml-cpp 0.7 loops forever, allocating: a reload of such a
// file must be refused within the bound, not hang the daemon.
TEST(PolicyBounded, YamlThatMakesTheReaderLoopIsRefused) {
  auto runaway = parsePolicyBounded({PolicyText{"p.yaml", ",a-\n  b\n"}});
  ASSERT_FALSE(runaway);
  EXPECT_TRUE(testing::refusedAsRunaway(runaway.error().message(), "p.yaml")) << runaway.error().message();
  auto good = parsePolicyBounded({PolicyText{"p.yaml", "reclaim: {floor: 64M}\n"}});
  ASSERT_TRUE(good) << good.error().message();
  EXPECT_EQ(good->reclaim.floor, 64ULL << 20);
  auto bad = parsePolicyBounded({PolicyText{"p.yaml", "reclaim: {floor: lots}\n"}});
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message().find("p.yaml:1"), std::string::npos) << "ordinary errors come through";
}

}  // namespace
}  // namespace reclaimd::policies

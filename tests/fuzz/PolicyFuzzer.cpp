// The policy loader, from a string: never crashes or throws, and a policy it accepts keeps
// the promises its validation makes (ordered bounds, no dropcache rule); each exact rule's
// own cgroup is governed by a rule that matches it, and --explain answers for it.
#include <cerrno>
#include <string>

#include "policies/Loader.h"
#include "policies/Rules.h"
#include "tests/fuzz/Check.h"

namespace {

using namespace reclaimd::policies;

// How many rules get the per-rule checks: each governingRule call matches every rule, and
// the loader itself is what is fuzzed here (the matcher has its own target).
constexpr std::size_t kRulesChecked = 16;

void checkSettings(const Policy& p) {
  FUZZ_CHECK(p.reclaim.stepMin <= p.reclaim.stepMax, "reclaim.step_min <= step_max");
  FUZZ_CHECK(p.reclaim.stepDivisor >= 1, "reclaim.step_divisor >= 1");
  FUZZ_CHECK(p.idle.interval <= p.idle.grace, "idle.interval <= grace");
  FUZZ_CHECK(p.idle.samplePeriod <= p.idle.interval, "idle.sample_period <= interval");
  FUZZ_CHECK(p.pressure.stall <= p.pressure.window, "pressure.stall <= window");
  FUZZ_CHECK(p.idle.thresholdPercent > 0 && p.idle.thresholdPercent <= 100, "threshold_percent in (0, 100]");
  FUZZ_CHECK(p.mode != Mode::DropCache || p.rules.empty(), "no rules under dropcache");
}

void checkRule(const Policy& p, std::size_t i) {
  const Rule& rule = p.rules[i];
  FUZZ_CHECK(rule.mode != Mode::DropCache, "a rule is never dropcache");
  FUZZ_CHECK(rule.stepMin <= rule.stepMax, "a rule's step_min <= step_max");
  FUZZ_CHECK(rule.idle.interval <= rule.idle.grace, "a rule's interval <= grace");
  FUZZ_CHECK(Pattern::parse(rule.pattern.text()).ok(), "a rule's pattern compiles again");
  const std::string& path = rule.pattern.text();
  // Exact patterns with backslashes are the `pattern` target's: left out here
  // so that finding does not hide the loader's own.
  if (!rule.pattern.exact() || path.find('\\') != std::string::npos) return;
  const int governing = governingRule(p.rules, path);
  FUZZ_CHECK(governing >= 0, "an exact rule's own cgroup is governed by a rule");
  FUZZ_CHECK(p.rules[static_cast<std::size_t>(governing)].pattern.matches(path), "the governing rule matches");
  (void)explain(p, path);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace reclaimd;
  // Bounded, as the daemon and check-config load it: yaml-cpp 0.7 loops forever on some
  // malformed input (",a-\n  b\n"), which the bound turns into a refusal.
  auto policy =
      policies::parsePolicyBounded({policies::PolicyText{"fuzz.yaml", std::string(fuzz::asText(data, size))}});
  if (!policy) {
    const std::string why = policy.error().message();
    FUZZ_CHECK(!why.empty(), "a rejected policy says why");
    // The parse runs in a forked child first: a sanitizer's report there (exit 1, or an abort)
    // must be a finding here, not a refusal.
    FUZZ_CHECK(policy.error().errnoValue() != EPROTO, "the bounded parse's child did not fail");
    // By the message's start: the input itself can hold the words (a key named so is echoed
    // back as "fuzz.yaml:2:3: unknown key ...the YAML reader crashed...", found by the fuzzer).
    FUZZ_CHECK(why.rfind("fuzz.yaml: the YAML reader crashed", 0) != 0, "the bounded parse's child did not crash");
    return 0;
  }
  checkSettings(*policy);
  (void)policy->reclaimMode();
  for (std::size_t i = 0; i < policy->rules.size() && i < kRulesChecked; ++i)
    checkRule(*policy, i);
  return 0;
}

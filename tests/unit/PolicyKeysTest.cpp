// The key table: the README reference and deploy/policy.yaml are generated from it and must
// equal what it generates; printing and parsing agree.
#include <gtest/gtest.h>

#include <algorithm>

#include "base/Quantities.h"
#include "policies/Keys.h"
#include "policies/Loader.h"
#include "tests/unit/SourceTree.h"

namespace reclaimd::policies {
namespace {

using namespace std::chrono_literals;
using reclaimd::testing::kSourceRoot;
using reclaimd::testing::readSource;
using reclaimd::testing::regenerate;
using reclaimd::testing::writeSource;

// The README's reference: from its header line to the `rules` row.
std::pair<std::size_t, std::size_t> tableSpan(const std::string& readme) {
  const std::size_t begin = readme.find("| key | default | meaning |\n");
  const std::string last = "| `rules` | none | per-cgroup rules, below |\n";
  const std::size_t end = readme.find(last, begin);
  if (begin == std::string::npos || end == std::string::npos) return {std::string::npos, 0};
  return {begin, end + last.size()};
}

TEST(PolicyKeys, ReadmeReferenceIsGeneratedFromTheTable) {
  const std::string path = kSourceRoot + "/README.md";
  std::string readme = readSource(path);
  const auto [begin, end] = tableSpan(readme);
  ASSERT_NE(begin, std::string::npos) << "README.md has no configuration reference table";
  if (regenerate()) {
    readme.replace(begin, end - begin, referenceTable());
    writeSource(path, readme);
  }
  const auto [from, to] = tableSpan(readme);
  EXPECT_EQ(readme.substr(from, to - from), referenceTable())
      << "README.md's reference differs from policies/Keys.cpp: RECLAIMD_REGENERATE=1 rewrites it";
}

TEST(PolicyKeys, ShippedPolicyIsTheBuiltInPolicyCommentedOut) {
  const std::string path = kSourceRoot + "/deploy/policy.yaml";
  if (regenerate()) writeSource(path, shippedPolicy(true));
  EXPECT_EQ(readSource(path), shippedPolicy(true))
      << "deploy/policy.yaml differs from policies/Keys.cpp: RECLAIMD_REGENERATE=1 rewrites it";
  // Its settings, uncommented, are exactly the built-in ones (every key, by the table).
  auto uncommented = parsePolicy(shippedPolicy(false), "uncommented");
  ASSERT_TRUE(uncommented.ok()) << uncommented.error().message() << "\n" << shippedPolicy(false);
  EXPECT_EQ(describeSettings(*uncommented), describeSettings(Policy{}));
  for (const Key& k : policyKeys()) {
    EXPECT_NE(shippedPolicy(true).find(std::string(k.name.substr(k.name.find('.') + 1)) + ": "), std::string::npos)
        << k.name << " is missing from the shipped file";
  }
}

TEST(PolicyKeys, EveryKeyReadsBackWhatItPrints) {
  // A policy that sets every key to its default explicitly gives the built-in settings: the
  // printed form of each value parses to the same value, through the loader's own key list.
  auto p = parsePolicy(shippedPolicy(false), "p.yaml");
  ASSERT_TRUE(p.ok());
  const Policy d;
  EXPECT_EQ(p->pressure.window, d.pressure.window);
  EXPECT_EQ(p->idle.thresholdPercent, d.idle.thresholdPercent);
  for (std::uint64_t bytes :
       std::initializer_list<std::uint64_t>{0, 1, 1023, 1024, 4097, 128 * kMiB, 1536 * kMiB, 1024 * kGiB})
    EXPECT_EQ(parseBytes(policySize(bytes)), bytes) << policySize(bytes);
  for (auto d2 : {1ms, 999ms, 1000ms, 1500ms, 60000ms, 90000ms, 3600000ms, 86400000ms})
    EXPECT_EQ(parseDuration(policyDuration(d2)), d2) << policyDuration(d2);
  EXPECT_EQ(policyDuration(120s), "2m");
  EXPECT_EQ(policySize(128 * kMiB), "128M");
}

TEST(PolicyKeys, DescribeSettingsListsEveryKey) {
  Policy p;
  p.idle.grace = 7min;
  const std::string text = describeSettings(p);
  EXPECT_NE(text.find("idle.grace: 7m\n"), std::string::npos) << text;
  EXPECT_NE(text.find("pressure.window: 2s\n"), std::string::npos) << text;
  EXPECT_NE(text.find("reclaim.floor: 128M\n"), std::string::npos) << text;
  EXPECT_EQ(static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n')), policyKeys().size());
}

TEST(PolicyKeys, RuleKeysShareTheMachineRanges) {
  // One range, written once in the table: the rule's grace takes idle.grace's limits.
  const Key* grace = findKey("idle.grace");
  ASSERT_NE(grace, nullptr);
  EXPECT_EQ(showLimits(*grace), "1s-24h");
  auto p = parsePolicy("rules:\n  - match: a\n    grace: 25h\n    interval: 1s\n", "r.yaml");
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.error().message().find("rules[1].grace: must be between 1s and 86400s"), std::string::npos)
      << p.error().message();
}

}  // namespace
}  // namespace reclaimd::policies

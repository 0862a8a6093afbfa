// The YAML policy: every key read, every error placed at its file, line and column.
#include <gtest/gtest.h>

#include "policies/Keys.h"
#include "policies/Loader.h"
#include "tests/unit/Fixture.h"

namespace reclaimd::policies {
namespace {

using namespace std::chrono_literals;

TEST(Loader, EmptyFileIsTheBuiltInPolicy) {
  auto p = parsePolicy("", "empty.yaml");
  ASSERT_TRUE(p.ok()) << p.error().message();
  EXPECT_EQ(p->mode, Mode::Gradual);
  EXPECT_EQ(p->idle.grace, 120s);
  EXPECT_EQ(p->reclaim.floor, 128 * kMiB);
  auto comments = parsePolicy("# nothing but a comment\n", "c.yaml");
  ASSERT_TRUE(comments.ok());
}

TEST(Loader, ReadsEveryKey) {
  auto p = parsePolicy(R"(mode: dropcache
idle:
  threshold_percent: 1.5%
  grace: 30s
  interval: 5s
  sample_period: 500ms
  predict: false
reclaim:
  floor: 64M
  step_min: 128MiB
  step_max: 2G
  step_divisor: 16
  chunk: 32M
  compact: false
)",
                       "all.yaml");
  ASSERT_TRUE(p.ok()) << p.error().message();
  EXPECT_EQ(p->mode, Mode::DropCache);
  EXPECT_DOUBLE_EQ(p->idle.thresholdPercent, 1.5);
  EXPECT_EQ(p->idle.grace, 30s);
  EXPECT_EQ(p->idle.interval, 5s);
  EXPECT_EQ(p->idle.samplePeriod, 500ms);
  EXPECT_FALSE(p->idle.predict);
  EXPECT_EQ(p->reclaim.floor, 64 * kMiB);
  EXPECT_EQ(p->reclaim.stepMin, 128 * kMiB);
  EXPECT_EQ(p->reclaim.stepMax, 2 * kGiB);
  EXPECT_EQ(p->reclaim.stepDivisor, 16u);
  EXPECT_EQ(p->reclaim.chunk, 32 * kMiB);
  EXPECT_FALSE(p->reclaim.compact);
}

struct ErrorCase {
  const char* name;
  const char* yaml;
  const char* expected;  // a substring of the message, position included
};

class LoaderErrorTest : public ::testing::TestWithParam<ErrorCase> {};

TEST_P(LoaderErrorTest, NamesFileLineAndColumn) {
  auto p = parsePolicy(GetParam().yaml, "policy.yaml");
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.error().code, Errc::Invalid);
  EXPECT_NE(p.error().message().find(GetParam().expected), std::string::npos) << p.error().message();
}

INSTANTIATE_TEST_SUITE_P(
    Table, LoaderErrorTest,
    ::testing::Values(
        ErrorCase{"unknown_top_key", "mode: gradual\nfloor: 1G\n", "policy.yaml:2:1: floor: unknown key"},
        ErrorCase{"unknown_nested_key", "idle:\n  grace: 1m\n  gracee: 2m\n",
                  "policy.yaml:3:3: idle.gracee: unknown key"},
        ErrorCase{"bad_mode", "mode: aggressive\n", "policy.yaml:1:7: mode: expected disabled, dropcache or gradual"},
        ErrorCase{"wrong_type_map", "idle: 5\n", "policy.yaml:1:7: idle: expected a mapping"},
        ErrorCase{"section_as_switch", "trim: false\n",
                  "policy.yaml:1:7: trim: expected a mapping of keys to values (enabled, "},
        ErrorCase{"wrong_type_list", "reclaim:\n  floor: [1, 2]\n",
                  "policy.yaml:2:10: reclaim.floor: expected a single value"},
        ErrorCase{"bad_size", "reclaim:\n  floor: lots\n", "policy.yaml:2:10: reclaim.floor: expected a size"},
        ErrorCase{"bad_duration", "idle:\n  grace: soon\n", "policy.yaml:2:10: idle.grace: expected a duration"},
        ErrorCase{"grace_too_short", "idle:\n  grace: 100ms\n", "idle.grace: must be between 1s and 86400s"},
        ErrorCase{"threshold_zero", "idle:\n  threshold_percent: 0\n",
                  "idle.threshold_percent: must be between 0.001 and 100"},
        ErrorCase{"threshold_over", "idle:\n  threshold_percent: 101\n", "and 100, got 101"},
        ErrorCase{"divisor_zero", "reclaim:\n  step_divisor: 0\n",
                  "reclaim.step_divisor: expected a whole number from 1"},
        ErrorCase{"bool", "reclaim:\n  compact: yes\n", "reclaim.compact: expected true or false"},
        ErrorCase{"chunk_tiny", "reclaim:\n  chunk: 4K\n", "reclaim.chunk: must be between 1MiB"},
        ErrorCase{"size_past_64_bits", "reclaim:\n  step_max: 99999999T\n",
                  "reclaim.step_max: must be between 1MiB and 1TiB, got 99999999T"},
        ErrorCase{"duration_past_64_bits", "trim:\n  interval: 99999999999999999999h\n",
                  "trim.interval: must be between"},
        ErrorCase{"percent_past_double", "trim:\n  percent: 1e400\n", "trim.percent: must be between"},
        ErrorCase{"size_bad_unit", "reclaim:\n  floor: 12Q\n", "reclaim.floor: expected a size"},
        ErrorCase{"step_order", "reclaim:\n  step_min: 1G\n  step_max: 256M\n",
                  "policy.yaml:3:13: reclaim.step_max: must not be smaller than reclaim.step_min"},
        ErrorCase{"interval_over_grace", "idle:\n  grace: 5s\n  interval: 10s\n",
                  "policy.yaml:3:13: idle.interval: must not be longer than idle.grace"},
        ErrorCase{"duplicate", "mode: gradual\nmode: disabled\n", "policy.yaml:2:1: mode: key appears twice"},
        ErrorCase{"not_yaml", "idle: [unclosed\n", "policy.yaml:2:1: not valid YAML"},
        ErrorCase{"top_is_list", "- a\n- b\n", "policy.yaml:1:1: policy: expected a mapping"},
        ErrorCase{"tab_indent", "idle:\n\tgrace: 1m\n", "not valid YAML"}),
    [](const auto& tc) { return std::string(tc.param.name); });

TEST(Loader, ReportsEveryErrorAtOnce) {
  auto p = parsePolicy("mode: x\nidle:\n  grace: y\nextra: 1\n", "many.yaml");
  ASSERT_FALSE(p.ok());
  const std::string m = p.error().message();
  EXPECT_NE(m.find("many.yaml:1:7: mode"), std::string::npos) << m;
  EXPECT_NE(m.find("many.yaml:3:10: idle.grace"), std::string::npos) << m;
  EXPECT_NE(m.find("many.yaml:4:1: extra"), std::string::npos) << m;
}

TEST(Loader, FileErrorsNameThePath) {
  testing::Fixture fx;
  auto missing = loadPolicyFile(fx.path("nope.yaml"));
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().errnoValue(), ENOENT);
  EXPECT_NE(missing.error().message().find("nope.yaml"), std::string::npos);
  fx.write("bad.yaml", "mode: sometimes\n");
  auto bad = loadPolicyFile(fx.path("bad.yaml"));
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find(fx.path("bad.yaml") + ":1:7"), std::string::npos) << bad.error().message();
}

TEST(Loader, ShippedPolicyFileIsTheBuiltInPolicy) {
  // The shipped file is every key commented out at its default: it loads as the built-in policy,
  // and so do its settings uncommented (the file is that text commented, PolicyKeysTest checks).
  auto file = loadPolicyFile(RECLAIMD_SOURCE_DIR "/deploy/policy.yaml");
  ASSERT_TRUE(file.ok()) << file.error().message();
  auto p = parsePolicy(shippedPolicy(false), "uncommented policy.yaml");
  ASSERT_TRUE(p.ok()) << p.error().message();
  const Policy d;  // the built-in defaults
  EXPECT_EQ(p->mode, d.mode);
  EXPECT_EQ(p->idle.thresholdPercent, d.idle.thresholdPercent);
  EXPECT_EQ(p->idle.grace, d.idle.grace);
  EXPECT_EQ(p->idle.interval, d.idle.interval);
  EXPECT_EQ(p->idle.samplePeriod, d.idle.samplePeriod);
  EXPECT_EQ(p->idle.predict, d.idle.predict);
  EXPECT_EQ(p->reclaim.floor, d.reclaim.floor);
  EXPECT_EQ(p->reclaim.stepMin, d.reclaim.stepMin);
  EXPECT_EQ(p->reclaim.stepMax, d.reclaim.stepMax);
  EXPECT_EQ(p->reclaim.stepDivisor, d.reclaim.stepDivisor);
  EXPECT_EQ(p->reclaim.chunk, d.reclaim.chunk);
  EXPECT_EQ(p->reclaim.compact, d.reclaim.compact);
  EXPECT_EQ(p->reclaim.cgroupFloor, d.reclaim.cgroupFloor);
  EXPECT_EQ(p->pressure.enabled, d.pressure.enabled);
  EXPECT_EQ(p->pressure.stall, d.pressure.stall);
  EXPECT_EQ(p->pressure.window, d.pressure.window);
  EXPECT_EQ(p->pressure.calm, d.pressure.calm);
  EXPECT_EQ(p->pressure.minStep, d.pressure.minStep);
  EXPECT_EQ(p->pressure.refaultLimit, d.pressure.refaultLimit);
  EXPECT_EQ(p->pressure.refaultWindow, d.pressure.refaultWindow);
  EXPECT_TRUE(p->rules.empty());
}

TEST(Loader, PressureKeys) {
  auto p = parsePolicy(
      "pressure:\n  enabled: false\n  stall: 300ms\n  window: 2s\n  calm: 1m\n  min_step: 4M\n"
      "  refault_limit: 8M\n  refault_window: 30s\n",
      "p.yaml");
  ASSERT_TRUE(p.ok()) << p.error().message();
  EXPECT_FALSE(p->pressure.enabled);
  EXPECT_EQ(p->pressure.stall, 300ms);
  EXPECT_EQ(p->pressure.window, 2s);
  EXPECT_EQ(p->pressure.calm, 60s);
  EXPECT_EQ(p->pressure.minStep, 4 * kMiB);
  EXPECT_EQ(p->pressure.refaultLimit, 8 * kMiB);
  EXPECT_EQ(p->pressure.refaultWindow, 30s);
  for (const char* bad : {"pressure:\n  window: 100ms\n", "pressure:\n  window: 11s\n",
                          "pressure:\n  stall: 2s\n  window: 1s\n", "pressure:\n  calm: 0s\n"}) {
    EXPECT_FALSE(parsePolicy(bad, "p.yaml").ok()) << bad;
  }
}

}  // namespace
}  // namespace reclaimd::policies

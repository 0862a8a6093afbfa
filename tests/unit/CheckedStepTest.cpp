// Counters near the top of their range: a step's freed bytes when a cache crosses 2^63, and a
// refault excess past 2^64 (a double that an integer conversion would make undefined).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "base/Checked.h"
#include "controller/engine/ReclaimStep.h"
#include "tests/unit/StepDriver.h"
#include "controller/engine/Refault.h"

namespace reclaimd::controller {
namespace {

using namespace std::chrono_literals;
using reclaimd::testing::runStep;
constexpr std::uint64_t kMax = std::numeric_limits<std::uint64_t>::max();
constexpr std::int64_t kSignedMax = std::numeric_limits<std::int64_t>::max();

TEST(CheckedStep, DifferencesAcross2To63AreHeldNotWrapped) {
  EXPECT_EQ(saturatingDifference(kMax, 0), kSignedMax);
  EXPECT_EQ(saturatingDifference(0, kMax), -kSignedMax);
  EXPECT_EQ(saturatingDifference((1ull << 63) + 10, (1ull << 63) - 10), 20);
  EXPECT_EQ(saturatingDifference(5, 7), -2);
  StepOutcome o;
  o.before = kMax;
  o.after = 0;
  EXPECT_EQ(o.freed(), kSignedMax) << "a whole cache freed is not a negative number";
}

TEST(CheckedStep, AChunkAcross2To63ReportsWhatItFreed) {
  std::uint64_t cache = (1ull << 63) + 32 * 1024 * 1024;  // the chunk takes it below 2^63
  std::vector<std::int64_t> freed;
  StepLimits limits{64ull << 20, 0, 64ull << 20, 1s, 1.0};
  runStep(
      limits, [&] { return std::optional<std::uint64_t>(cache); },
      [&](std::uint64_t bytes) {
        cache -= bytes;
        return cgroup::ReclaimWrite{};
      },
      [] { return false; }, [&](std::uint64_t, const cgroup::ReclaimWrite&, std::int64_t f) { freed.push_back(f); });
  ASSERT_FALSE(freed.empty());
  EXPECT_EQ(freed[0], 64 << 20);
}

TEST(CheckedStep, ARefaultExcessPast2To64IsHeld) {
  EXPECT_EQ(saturatingCount(1e30), kMax);
  EXPECT_EQ(saturatingCount(std::ldexp(1.0, 64)), kMax);
  EXPECT_EQ(saturatingCount(-3.0), 0u);
  EXPECT_EQ(saturatingCount(std::nan("")), 0u);
  EXPECT_EQ(saturatingCount(4096.9), 4096u);
  RefaultGuard g(RefaultConfig{10s, 256});
  const TimePoint t0{};
  g.stepEnded(t0, 0);
  auto jump = g.check(t0 + 1s, kMax);
  ASSERT_TRUE(jump.has_value());
  EXPECT_EQ(jump->excessPages, kMax);
}

}  // namespace
}  // namespace reclaimd::controller

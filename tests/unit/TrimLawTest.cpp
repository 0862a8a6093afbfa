// The trimming law alone: probe sizes, growth after clean stretches, holds only for refaults
// that recur, and holds that grow while they keep recurring.
#include <gtest/gtest.h>

#include "controller/engine/TrimLaw.h"

namespace reclaimd::controller {
namespace {

using namespace std::chrono_literals;
constexpr std::uint64_t kMiB = 1ULL << 20;

const TrimLawSettings kDefault{4 * kMiB, 1, 64 * kMiB, 120s};

TEST(TrimLaw, StartsAtOnePercentOrTheSmallestStep) {
  TrimLaw law;
  law.start(TimePoint{}, 1000 * kMiB, kDefault);
  EXPECT_EQ(law.size(1000 * kMiB, kDefault), 10 * kMiB);
  law.start(TimePoint{}, 100 * kMiB, kDefault);
  EXPECT_EQ(law.size(100 * kMiB, kDefault), 4 * kMiB);
  EXPECT_EQ(law.size(3 * kMiB, kDefault), 3 * kMiB) << "never more than lies above the floor";
}

TEST(TrimLaw, DoublesEveryProbeAfterACleanStretchUpToItsCaps) {
  TrimLaw law;
  TimePoint t{};
  law.start(t, 1000 * kMiB, kDefault);
  for (t += 6s; t < TimePoint{} + 120s; t += 6s) {
    law.probed(t, 1000 * kMiB, kDefault);
    EXPECT_EQ(law.step(), 10 * kMiB) << "no growth within the first stretch";
  }
  law.probed(t, 1000 * kMiB, kDefault);
  EXPECT_EQ(law.step(), 20 * kMiB);
  law.probed(t += 6s, 1000 * kMiB, kDefault);
  EXPECT_EQ(law.step(), 40 * kMiB);
  law.probed(t += 6s, 1000 * kMiB, kDefault);
  EXPECT_EQ(law.step(), 64 * kMiB) << "the policy's chunk";
  law.probed(t += 6s, 100 * kMiB, kDefault);
  EXPECT_EQ(law.step(), 64 * kMiB) << "the step is kept";
  EXPECT_EQ(law.size(100 * kMiB, kDefault), 25 * kMiB) << "the size follows what is left: a quarter of it";
  TrimLaw small;
  small.start(TimePoint{}, 100 * kMiB, kDefault);
  for (TimePoint u = TimePoint{} + 120s; u < TimePoint{} + 200s; u += 6s) small.probed(u, 100 * kMiB, kDefault);
  EXPECT_EQ(small.step(), 25 * kMiB) << "a quarter of what lies above the floor";
}

TEST(TrimLaw, ARefaultOnceResetsTheStepWithoutAHold) {
  TrimLaw law;
  TimePoint t{};
  law.start(t, 1000 * kMiB, kDefault);
  for (int i = 0; i < 25; ++i) law.probed(t += 6s, 1000 * kMiB, kDefault);
  ASSERT_EQ(law.step(), 64 * kMiB);
  EXPECT_FALSE(law.refaulted(t, 900 * kMiB, kDefault).has_value());
  EXPECT_FALSE(law.held(t));
  EXPECT_EQ(law.step(), 4 * kMiB);
  law.probed(t += 6s, 900 * kMiB, kDefault);
  EXPECT_EQ(law.step(), 4 * kMiB) << "a new clean stretch starts at the refault";
}

TEST(TrimLaw, RefaultsWithinAStretchHoldAndTheHoldsGrowWhileTheyRecur) {
  TrimLaw law;
  TimePoint t{};
  law.start(t, 300 * kMiB, kDefault);
  ASSERT_FALSE(law.refaulted(t += 6s, 300 * kMiB, kDefault));
  auto hold = law.refaulted(t += 30s, 290 * kMiB, kDefault);
  ASSERT_TRUE(hold.has_value());
  EXPECT_EQ(*hold, 120s);
  EXPECT_TRUE(law.held(t + 119s));
  EXPECT_EQ(law.heldLevel(), 290 * kMiB);
  std::vector<std::chrono::nanoseconds> holds;
  for (int i = 0; i < 6; ++i) {
    t = law.heldUntil() + 12s;  // the first probe after the hold refaults again
    law.start(t - 6s, 300 * kMiB, kDefault);
    holds.push_back(law.refaulted(t, 300 * kMiB, kDefault).value_or(0s));
  }
  const std::vector<std::chrono::nanoseconds> want{240s, 480s, 960s, 1800s, 1800s, 1800s};
  EXPECT_EQ(holds, want);
}

TEST(TrimLaw, ACleanStretchEndsTheEscalation) {
  TrimLaw law;
  TimePoint t{};
  law.start(t, 300 * kMiB, kDefault);
  law.refaulted(t += 6s, 300 * kMiB, kDefault);
  ASSERT_TRUE(law.refaulted(t += 6s, 300 * kMiB, kDefault));
  t = law.heldUntil();
  law.start(t, 300 * kMiB, kDefault);
  for (int i = 0; i < 25; ++i) law.probed(t += 6s, 300 * kMiB, kDefault);
  EXPECT_EQ(law.holds(), 0u);
  ASSERT_FALSE(law.refaulted(t += 6s, 300 * kMiB, kDefault)) << "a refault after a clean stretch: learning";
  EXPECT_EQ(law.refaulted(t += 6s, 300 * kMiB, kDefault).value_or(0s), 120s) << "the escalation starts over";
}

TEST(TrimLaw, HugeFiguresSaturate) {
  TrimLaw law;
  const std::uint64_t huge = ~std::uint64_t{0};
  const TrimLawSettings s{4 * kMiB, 100, huge, 1s};
  law.start(TimePoint{}, huge, s);
  for (int i = 0; i < 70; ++i) law.probed(TimePoint{} + std::chrono::seconds(2 + i), huge, s);
  EXPECT_EQ(law.step(), huge / 4);
  EXPECT_EQ(law.size(huge, s), huge / 4);
}

}  // namespace
}  // namespace reclaimd::controller

// The one line splitter and field splitter, checked counter arithmetic, and the fd limit.
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <limits>
#include <string>
#include <vector>

#include "base/Checked.h"
#include "base/Limits.h"
#include "base/Text.h"

namespace reclaimd {
namespace {

using namespace std::chrono_literals;

constexpr std::uint64_t kMax = std::numeric_limits<std::uint64_t>::max();

std::vector<std::string> all(const Split& split) {
  std::vector<std::string> out;
  for (std::string_view piece : split)
    out.emplace_back(piece);
  return out;
}

using Pieces = std::vector<std::string>;

struct LinesCase {
  const char* name;
  std::string input;
  Pieces want;
};

class LinesTest : public ::testing::TestWithParam<LinesCase> {};

TEST_P(LinesTest, Splits) {
  EXPECT_EQ(all(lines(GetParam().input)), GetParam().want);
}

// The behaviour of the six loops it replaces: empty lines are kept, a last line without its
// newline is a line, and a final newline adds no empty line.
INSTANTIATE_TEST_SUITE_P(Table, LinesTest,
                         ::testing::Values(LinesCase{"empty", "", {}}, LinesCase{"one_newline", "\n", {""}},
                                           LinesCase{"two", "a 1\nb 2\n", {"a 1", "b 2"}},
                                           LinesCase{"no_final_newline", "a\nb", {"a", "b"}},
                                           LinesCase{"blank_inside", "a\n\nb\n", {"a", "", "b"}},
                                           LinesCase{"blank_at_end", "a\n\n", {"a", ""}},
                                           LinesCase{"carriage_return_kept", "a\r\n", {"a\r"}}),
                         [](const auto& tc) { return std::string(tc.param.name); });

TEST(Fields, SkipsRunsOfSeparators) {
  EXPECT_EQ(all(fields("cpu  1 2\t3")), (Pieces{"cpu", "1", "2", "3"}));
  EXPECT_EQ(all(fields("  lead and trail  ")), (Pieces{"lead", "and", "trail"}));
  EXPECT_EQ(all(fields("")), Pieces{});
  EXPECT_EQ(all(fields(" \t ")), Pieces{});
  EXPECT_EQ(all(fields("a\tb c", " ")), (Pieces{"a\tb", "c"})) << "only the separators asked for";
}

TEST(Fields, IteratorsOutliveTheirSplit) {
  const std::string text = "x y z";
  Split::Iterator it = fields(text).begin();  // the Split is a temporary, gone after this line
  EXPECT_EQ(*it, "x");
  ++it;
  EXPECT_EQ(*it, "y");
  const Split split = fields(text);
  EXPECT_EQ(std::vector<std::string_view>(split.begin(), split.end()).size(), 3u);
}

TEST(SplitOnce, AtTheFirstSeparator) {
  auto kv = splitOnce("total=12=3", '=');
  ASSERT_TRUE(kv.has_value());
  EXPECT_EQ(kv->first, "total");
  EXPECT_EQ(kv->second, "12=3");
  auto untrimmed = splitOnce("MemTotal:   2048 kB", ':');
  ASSERT_TRUE(untrimmed.has_value());
  EXPECT_EQ(untrimmed->second, "   2048 kB");
  EXPECT_FALSE(splitOnce("no separator", '=').has_value());
  auto trailing = splitOnce("key ", ' ');
  ASSERT_TRUE(trailing.has_value());
  EXPECT_EQ(trailing->second, "");
}

TEST(Checked, AddAndMultiply) {
  EXPECT_EQ(checkedAdd(1, 2), 3u);
  EXPECT_EQ(checkedAdd(kMax, 0), kMax);
  EXPECT_FALSE(checkedAdd(kMax, 1).has_value());
  EXPECT_EQ(checkedMul(1ULL << 32, (1ULL << 32) - 1), kMax - ((1ULL << 32) - 1));
  EXPECT_FALSE(checkedMul(1ULL << 32, 1ULL << 32).has_value());
  EXPECT_EQ(checkedMul(0, kMax), 0u);
  EXPECT_EQ(checkedSum({1, 2, 3}), 6u);
  EXPECT_FALSE(checkedSum({kMax - 1, 1, 1}).has_value());
  EXPECT_EQ(saturatingAdd(kMax - 5, 16 * 1024 * 1024), kMax) << "a chunk past a huge cache is still huge";
  EXPECT_EQ(saturatingAdd(5, 6), 11u);
}

TEST(Checked, Nanoseconds) {
  auto ok = checkedNanoseconds(123, 10ms, "ticks");
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(*ok, 1230ms);
  // 10^12 ticks of 10 ms: 10^19 ns, past what a signed 64-bit count holds (9.2 * 10^18).
  auto ticks = checkedNanoseconds(1'000'000'000'000ULL, 10ms, "ticks");
  ASSERT_FALSE(ticks.ok());
  EXPECT_EQ(ticks.error().errnoValue(), EOVERFLOW);
  EXPECT_NE(ticks.error().message().find("ticks"), std::string::npos);
  EXPECT_FALSE(checkedNanoseconds(kMax, 1ns, "x").ok()) << "2^64-1 ns does not fit a signed count";
  EXPECT_FALSE(checkedNanoseconds(10'000'000'000'000'000ULL, 1us, "usage_usec").ok());
  auto edge = checkedNanoseconds(std::numeric_limits<std::int64_t>::max(), 1ns, "x");
  ASSERT_TRUE(edge.ok());
  EXPECT_EQ(edge->count(), std::numeric_limits<std::int64_t>::max());
}

// Lowers the soft limit for one test and puts it back: the hard limit is never touched, so
// the lowering can be undone without privilege.
class SoftFdLimit {
 public:
  explicit SoftFdLimit(rlim_t soft) {
    ::getrlimit(RLIMIT_NOFILE, &saved_);
    rlimit lowered = saved_;
    lowered.rlim_cur = soft;
    ok_ = ::setrlimit(RLIMIT_NOFILE, &lowered) == 0;
  }
  ~SoftFdLimit() { ::setrlimit(RLIMIT_NOFILE, &saved_); }
  bool ok() const { return ok_; }
  rlim_t hard() const { return saved_.rlim_max; }

 private:
  rlimit saved_{};
  bool ok_ = false;
};

TEST(Limits, RaisesTheSoftFdLimitToTheHardOne) {
  SoftFdLimit low(64);
  ASSERT_TRUE(low.ok());
  ASSERT_GT(low.hard(), 64u) << "the hard limit must be above 64 for this test to mean anything";
  auto raised = raiseFdLimit();
  ASSERT_TRUE(raised.ok()) << raised.error().message();
  EXPECT_EQ(*raised, low.hard());
  rlimit now{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &now), 0);
  EXPECT_EQ(now.rlim_cur, low.hard());
  auto again = raiseFdLimit();
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, low.hard()) << "already at the hard limit: unchanged";
}

}  // namespace
}  // namespace reclaimd

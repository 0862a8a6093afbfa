// Table-driven tests of the /proc parsers: /proc/stat's cpu line and /proc/meminfo.
#include <gtest/gtest.h>

#include "base/Quantities.h"
#include "proc/Meminfo.h"
#include "proc/ProcStat.h"
#include "proc/Vmstat.h"
#include "tests/unit/Fixture.h"

namespace reclaimd::proc {
namespace {

struct StatCase {
  const char* name;
  std::string input;
  bool ok;
  std::uint64_t busy;
  std::uint64_t total;
};

class ProcStatTest : public ::testing::TestWithParam<StatCase> {};

TEST_P(ProcStatTest, Parses) {
  const StatCase& c = GetParam();
  auto r = parseProcStat(c.input);
  ASSERT_EQ(r.ok(), c.ok) << (r.ok() ? "parsed" : r.error().message());
  if (!c.ok) {
    EXPECT_EQ(r.error().code, Errc::Parse);
    EXPECT_NE(r.error().context.find("/proc/stat"), std::string::npos);
    return;
  }
  EXPECT_EQ(r->busy(), c.busy);
  EXPECT_EQ(r->total(), c.total);
}

INSTANTIATE_TEST_SUITE_P(Table, ProcStatTest,
                         ::testing::Values(
                             // user nice system idle iowait irq softirq steal guest guest_nice
                             StatCase{"full_line", "cpu  100 20 30 1000 50 5 6 7 40 2\ncpu0 1 2 3 4\n", true,
                                      100 + 20 + 30 + 5 + 6 + 7, 100 + 20 + 30 + 5 + 6 + 7 + 1000 + 50},
                             StatCase{"guest_not_added_twice", "cpu  100 0 0 0 0 0 0 0 100 0\n", true, 100, 100},
                             StatCase{"real_kernel", testing::procStat(10132153, 3084719, 46828483), true,
                                      10132153 + 3084719, 10132153 + 3084719 + 46828483},
                             StatCase{"four_fields_old_kernel", "cpu  1 2 3 4\n", true, 6, 10},
                             StatCase{"tabs", "cpu \t1\t2\t3\t4\t5\t6\t7\t8\n", true, 1 + 2 + 3 + 6 + 7 + 8, 36},
                             StatCase{"truncated_no_newline", "cpu  100 20 30 1000 5", false, 0, 0},
                             StatCase{"too_few_fields", "cpu  100 20 30\n", false, 0, 0},
                             StatCase{"not_a_number", "cpu  100 2x 30 1000\n", false, 0, 0},
                             StatCase{"negative", "cpu  -1 0 0 10\n", false, 0, 0},
                             StatCase{"overflow", "cpu  99999999999999999999999 0 0 1\n", false, 0, 0},
                             StatCase{"per_cpu_first", "cpu0 1 2 3 4\n", false, 0, 0},
                             StatCase{"empty", "", false, 0, 0}, StatCase{"garbage", "\x01\x02\xff\n", false, 0, 0}),
                         [](const auto& tc) { return std::string(tc.param.name); });

TEST(ProcStat, TicksThatOverflowAreAnErrorNotAWrap) {
  // 2^64-1 user ticks plus one more: busy() and total() would wrap to a small number.
  auto wrapped = parseProcStat("cpu  18446744073709551615 1 0 0\n");
  ASSERT_FALSE(wrapped.ok()) << "busy() would be " << wrapped->busy();
  EXPECT_EQ(wrapped.error().errnoValue(), EOVERFLOW) << wrapped.error().message();
  auto idle = parseProcStat("cpu  0 0 0 18446744073709551615 1\n");
  ASSERT_FALSE(idle.ok());
  EXPECT_EQ(idle.error().errnoValue(), EOVERFLOW);
  auto largest = parseProcStat("cpu  18446744073709551615 0 0 0\n");
  ASSERT_TRUE(largest.ok()) << "a sum that fits is fine";
  EXPECT_EQ(largest->total(), 18446744073709551615u);
}

TEST(ProcStat, CpuTimeInNanoseconds) {
  using namespace std::chrono_literals;
  auto t = parseProcStat("cpu  100 20 30 1000 50 5 6 7 40 2\n");
  ASSERT_TRUE(t.ok());
  auto ns = cpuTime(*t, 10ms);
  ASSERT_TRUE(ns.ok()) << ns.error().message();
  EXPECT_EQ(ns->busy, 1680ms);
  EXPECT_EQ(ns->total, 12180ms);
  // user=10^12 ticks of 10 ms is 10^19 ns: signed overflow for a plain int64 multiplication.
  auto big = parseProcStat("cpu  1000000000000 0 0 10\n");
  ASSERT_TRUE(big.ok());
  auto overflow = cpuTime(*big, 10ms);
  ASSERT_FALSE(overflow.ok());
  EXPECT_EQ(overflow.error().errnoValue(), EOVERFLOW);
  EXPECT_NE(overflow.error().message().find("/proc/stat"), std::string::npos);
  CpuTimes unparsed;
  unparsed.user = UINT64_MAX;
  unparsed.idle = 1;
  EXPECT_FALSE(cpuTime(unparsed, 1ns).ok()) << "checked even for a CpuTimes not from the parser";
}

struct MeminfoCase {
  const char* name;
  std::string input;
  bool ok;
  std::uint64_t reclaimable;
  std::uint64_t memTotal;
  std::uint64_t swapTotal;
};

class MeminfoTest : public ::testing::TestWithParam<MeminfoCase> {};

TEST_P(MeminfoTest, Parses) {
  const MeminfoCase& c = GetParam();
  auto r = parseMeminfo(c.input);
  ASSERT_EQ(r.ok(), c.ok) << (r.ok() ? "parsed" : r.error().message());
  if (!c.ok) {
    EXPECT_NE(r.error().context.find("/proc/meminfo"), std::string::npos);
    return;
  }
  EXPECT_EQ(r->reclaimable(), c.reclaimable);
  EXPECT_EQ(r->memTotal, c.memTotal);
  EXPECT_EQ(r->swapTotal, c.swapTotal);
}

const std::string kMinimal =
    "MemTotal: 2048 kB\nMemFree: 1024 kB\nActive(file): 10 kB\nInactive(file): 20 kB\nSReclaimable: 5 kB\n";

INSTANTIATE_TEST_SUITE_P(
    Table, MeminfoTest,
    ::testing::Values(
        MeminfoCase{"realistic", testing::meminfo(2048, 1000, 300, 200, 50, 0), true, 550 * kMiB, 2048 * kMiB, 0},
        MeminfoCase{"with_swap", testing::meminfo(8192, 1000, 1, 2, 3, 1024), true, 6 * kMiB, 8192 * kMiB, 1024 * kMiB},
        MeminfoCase{"minimal", kMinimal, true, 35 * kKiB, 2048 * kKiB, 0},
        MeminfoCase{"missing_sreclaimable",
                    "MemTotal: 2048 kB\nMemFree: 1024 kB\nActive(file): 10 kB\nInactive(file): 20 kB\n", false, 0, 0,
                    0},
        MeminfoCase{"malformed_value", "MemTotal: 20x48 kB\nMemFree: 1 kB\nActive(file): 1 kB\n", false, 0, 0, 0},
        MeminfoCase{"missing_unit", "MemTotal: 2048\nMemFree: 1 kB\n", false, 0, 0, 0},
        MeminfoCase{"truncated_last_line", kMinimal.substr(0, kMinimal.size() - 5), false, 0, 0, 0},
        MeminfoCase{"free_above_total",
                    "MemTotal: 1 kB\nMemFree: 2 kB\nActive(file): 0 kB\nInactive(file): 0 kB\nSReclaimable: 0 kB\n",
                    false, 0, 0, 0},
        MeminfoCase{"empty", "", false, 0, 0, 0}),
    [](const auto& tc) { return std::string(tc.param.name); });

TEST(Meminfo, SumsThatOverflowAreAnError) {
  // 2^53 kB is 2^63 bytes: each value fits, their sum in reclaimable() does not.
  const std::string huge = "9007199254740992 kB\n";
  auto r = parseMeminfo("MemTotal: 1 kB\nMemFree: 0 kB\nActive(file): " + huge + "Inactive(file): " + huge +
                        "SReclaimable: " + huge);
  ASSERT_FALSE(r.ok()) << "reclaimable() would be " << r->reclaimable();
  EXPECT_EQ(r.error().errnoValue(), EOVERFLOW);
  EXPECT_NE(r.error().message().find("/proc/meminfo"), std::string::npos);
  auto bytes = parseMeminfo(
      "MemTotal: 18014398509481984 kB\nMemFree: 0 kB\nActive(file): 0 kB\n"
      "Inactive(file): 0 kB\nSReclaimable: 0 kB\n");
  EXPECT_FALSE(bytes.ok()) << "2^54 kB is 2^64 bytes: does not fit";
}

// Refaults, and of those the pages the kernel activated (put back among those it keeps).
TEST(Vmstat, ReadsTheFileCountersAndTheirOlderNames) {
  auto w = proc::parseWorkingset(
      "nr_free_pages 1\nworkingset_refault_anon 3\nworkingset_refault_file 12345\n"
      "workingset_activate_anon 2\nworkingset_activate_file 678\nworkingset_restore_file 9\n");
  ASSERT_TRUE(w.ok()) << w.error().message();
  EXPECT_EQ(w->refaults, 12345u);
  EXPECT_EQ(w->activations, 678u);
  w = proc::parseWorkingset("workingset_refault 77\nworkingset_activate 7\n");  // before 5.9
  ASSERT_TRUE(w.ok());
  EXPECT_EQ(w->refaults, 77u);
  EXPECT_EQ(w->activations, 7u);
  w = proc::parseWorkingset("workingset_refault_file 5\n");
  ASSERT_TRUE(w.ok());
  EXPECT_EQ(w->activations, 0u) << "no activation line: none counted";
}

TEST(Vmstat, MalformedOrMissingRefaultsAreAnError) {
  EXPECT_FALSE(proc::parseWorkingset("nr_free_pages 1\n").ok());
  EXPECT_FALSE(proc::parseWorkingset("workingset_refault_file x\n").ok());
  const auto bad = proc::parseWorkingset("workingset_refault_file 1\nworkingset_activate_file -1\n");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("workingset_activate_file -1"), std::string::npos) << bad.error().message();
}

}  // namespace
}  // namespace reclaimd::proc

// Table-driven tests of the cgroup-side parsers: mountinfo, memory.stat, cpu.stat.
#include <gtest/gtest.h>

#include "cgroup/Controllers.h"
#include "cgroup/Mountinfo.h"
#include "cgroup/Reclaim.h"
#include "cgroup/Stat.h"

namespace reclaimd::cgroup {
namespace {

// Captured from this project's development host: a hybrid layout with the memory controller
// on cgroup v1 and an empty cgroup2 at /sys/fs/cgroup/unified.
constexpr const char* kHybrid =
    "22 1 254:0 / / rw,relatime - ext4 /dev/vda rw\n"
    "25 22 0:22 / /sys rw,nosuid,nodev,noexec,relatime shared:7 - sysfs sysfs rw\n"
    "26 25 0:23 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
    "27 26 0:24 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n"
    "28 26 0:25 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n";

// A systemd host with the unified hierarchy.
constexpr const char* kUnified =
    "22 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda1 rw\n"
    "30 25 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:9 - cgroup2 cgroup2 "
    "rw,nsdelegate,memory_recursiveprot\n";

// A container whose cgroup2 mount shows only its own subtree, plus the host's tree bind
// mounted elsewhere (as a DaemonSet does).
constexpr const char* kContainer =
    "500 400 0:26 /kubepods/pod1 /sys/fs/cgroup ro,relatime - cgroup2 cgroup rw\n"
    "501 400 0:26 / /host/sys/fs/cgroup rw,relatime - cgroup2 cgroup rw\n";

struct MountCase {
  const char* name;
  const char* input;
  bool parses;
  std::optional<std::string> cgroup2;
};

class MountinfoTest : public ::testing::TestWithParam<MountCase> {};

TEST_P(MountinfoTest, FindsCgroup2) {
  const MountCase& c = GetParam();
  auto mounts = parseMountinfo(c.input);
  ASSERT_EQ(mounts.ok(), c.parses) << (mounts.ok() ? "parsed" : mounts.error().message());
  if (!c.parses) return;
  auto found = findCgroup2(*mounts);
  ASSERT_EQ(found.has_value(), c.cgroup2.has_value());
  if (found) {
    EXPECT_EQ(found->mountPoint, *c.cgroup2);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Table, MountinfoTest,
    ::testing::Values(MountCase{"hybrid", kHybrid, true, "/sys/fs/cgroup/unified"},
                      MountCase{"unified", kUnified, true, "/sys/fs/cgroup"},
                      MountCase{"container_bind_mount", kContainer, true, "/host/sys/fs/cgroup"},
                      MountCase{"no_cgroup2", "22 1 254:0 / / rw - ext4 /dev/vda rw\n", true, std::nullopt},
                      MountCase{"escaped_space", "30 25 0:26 / /mnt/my\\040cgroup rw - cgroup2 none rw\n", true,
                                "/mnt/my cgroup"},
                      MountCase{"optional_fields",
                                "30 25 0:26 / /cg rw shared:1 master:2 unbindable - cgroup2 none rw\n", true, "/cg"},
                      MountCase{"no_separator", "30 25 0:26 / /cg rw cgroup2 none rw\n", false, std::nullopt},
                      MountCase{"truncated", "30 25 0:26 /", false, std::nullopt},
                      MountCase{"empty", "", true, std::nullopt}),
    [](const auto& tc) { return std::string(tc.param.name); });

TEST(MemoryStat, ParsesTheFieldsReclaimNeeds) {
  auto s = parseMemoryStat(
      "anon 1048576\nfile 314572800\nkernel 2000\nshmem 4096\nfile_mapped 0\nactive_anon 0\ninactive_anon 0\n"
      "active_file 104857600\ninactive_file 209715200\nslab_reclaimable 8192\nworkingset_refault_file 77\n"
      "workingset_activate_file 70\nworkingset_restore_file 7\n");
  ASSERT_TRUE(s.ok()) << s.error().message();
  EXPECT_EQ(s->fileCache(), 314572800u);
  EXPECT_EQ(s->shmem, 4096u);
  EXPECT_EQ(s->slabReclaimable, 8192u);
  EXPECT_EQ(s->workingsetRefaultFile, 77u);
  EXPECT_EQ(s->workingsetActivateFile, 70u);
}

TEST(MemoryStat, OlderKernelWithoutRefaultFileIsFine) {
  auto s = parseMemoryStat("active_file 1\ninactive_file 2\nworkingset_refault 5\n");
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->workingsetRefaultFile, 0u);
  EXPECT_EQ(s->workingsetActivateFile, 0u);
}

TEST(MemoryStat, MalformedOrMissingIsAnError) {
  EXPECT_FALSE(parseMemoryStat("active_file 1\n").ok());
  EXPECT_FALSE(parseMemoryStat("active_file x\ninactive_file 2\n").ok());
  EXPECT_FALSE(parseMemoryStat("active_file\ninactive_file 2\n").ok());
  EXPECT_FALSE(parseMemoryStat("").ok());
}

TEST(CpuStat, ParsesUsage) {
  auto s = parseCpuStat("usage_usec 8734201\nuser_usec 5000000\nsystem_usec 3734201\nnr_periods 0\n");
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->usageUsec, 8734201u);
  EXPECT_FALSE(parseCpuStat("user_usec 5\n").ok());
  EXPECT_FALSE(parseCpuStat("usage_usec -5\n").ok());
}

TEST(MemoryStat, CacheThatOverflowsIsAnError) {
  // fileCache() would wrap to 0, and "wait until the cache regrows" would never wait.
  auto s = parseMemoryStat("active_file 18446744073709551615\ninactive_file 1\n");
  ASSERT_FALSE(s.ok()) << "fileCache() would be " << s->fileCache();
  EXPECT_EQ(s.error().errnoValue(), EOVERFLOW);
  auto edge = parseMemoryStat("active_file 18446744073709551614\ninactive_file 1\n");
  ASSERT_TRUE(edge.ok());
  EXPECT_EQ(edge->fileCache(), 18446744073709551615u);
}

TEST(CpuStat, UsageInNanosecondsIsChecked) {
  using namespace std::chrono_literals;
  auto s = parseCpuStat("usage_usec 8734201\n");
  ASSERT_TRUE(s.ok());
  auto usage = s->usage();
  ASSERT_TRUE(usage.ok());
  EXPECT_EQ(*usage, 8734201us);
  // 10^16 us is 10^19 ns: signed overflow in std::chrono::microseconds -> nanoseconds.
  auto big = parseCpuStat("usage_usec 10000000000000000\n");
  ASSERT_TRUE(big.ok());
  auto overflow = big->usage();
  ASSERT_FALSE(overflow.ok());
  EXPECT_EQ(overflow.error().errnoValue(), EOVERFLOW);
  EXPECT_NE(overflow.error().message().find("usage_usec"), std::string::npos);
}

TEST(Controllers, WholeWords) {
  EXPECT_EQ(parseControllers("cpuset cpu io memory hugetlb pids rdma misc\n"),
            (std::vector<std::string>{"cpuset", "cpu", "io", "memory", "hugetlb", "pids", "rdma", "misc"}));
  EXPECT_TRUE(parseControllers("").empty());
  EXPECT_TRUE(parseControllers("\n").empty());
  EXPECT_TRUE(hasController("cpu io memory\n", "memory"));
  EXPECT_TRUE(hasController("memory", "memory"));
  EXPECT_FALSE(hasController("cpu io memoryx\n", "memory"));
  EXPECT_FALSE(hasController("cpu io\n", "memory"));
  EXPECT_FALSE(hasController("", "memory"));
}

TEST(Reclaim, RequestSpelling) {
  EXPECT_EQ(reclaimRequest(268435456, ReclaimFormat::SwappinessZero), "268435456 swappiness=0");
  EXPECT_EQ(reclaimRequest(268435456, ReclaimFormat::Plain), "268435456");
  EXPECT_EQ(reclaimRequest(0, ReclaimFormat::SwappinessZero), "0 swappiness=0");
}

TEST(Reclaim, OneTableOfErrnoMeanings) {
  EXPECT_EQ(classifyReclaimErrno(0), ReclaimStatus::Done);
  EXPECT_EQ(classifyReclaimErrno(EAGAIN), ReclaimStatus::Partial);
  EXPECT_EQ(classifyReclaimErrno(EINVAL), ReclaimStatus::Unsupported);
  EXPECT_EQ(classifyReclaimErrno(ENOENT), ReclaimStatus::Gone);
  EXPECT_EQ(classifyReclaimErrno(ENODEV), ReclaimStatus::Gone);
  EXPECT_EQ(classifyReclaimErrno(EINTR), ReclaimStatus::Interrupted);
  EXPECT_EQ(classifyReclaimErrno(EBUSY), ReclaimStatus::Failed);
  EXPECT_EQ(classifyReclaimErrno(EACCES), ReclaimStatus::Failed);
}

}  // namespace
}  // namespace reclaimd::cgroup

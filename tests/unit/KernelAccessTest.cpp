// The kernel's access information on fake sysfs trees shaped as Debian's 6.1, 6.12 and 7.x
// offer it: the LRU's kind, DAMON and its modules, and the same through `reclaimd probe`.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "controller/KernelAccess.h"
#include "tests/unit/SimFiles.h"
#include "tests/unit/Fixture.h"
#include "tests/unit/Process.h"

namespace reclaimd::controller {
namespace {

using testing::Fixture;

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// 7.x with MGLRU on: DAMON's sysfs, DAMON_RECLAIM off and DAMON_STAT running.
void newest(const Fixture& fx) {
  fx.write("sys/kernel/mm/lru_gen/enabled", "0x0007\n");
  fx.mkdir("sys/kernel/mm/damon/admin");
  fx.write("sys/module/damon_reclaim/parameters/enabled", "N\n");
  fx.write("sys/module/damon_reclaim/parameters/min_age", "120000000\n");
  fx.write("sys/module/damon_reclaim/parameters/wmarks_high", "500\n");
  fx.write("sys/module/damon_reclaim/parameters/bytes_reclaimed_regions", "0\n");
  fx.write("sys/module/damon_stat/parameters/enabled", "Y\n");
}

TEST(KernelAccess, NothingOnAnEmptySysfs) {
  Fixture fx;
  fx.mkdir("sys");
  const KernelAccess a = probeAccess(fx.path("sys"));
  EXPECT_FALSE(a.multiGen);
  EXPECT_TRUE(a.lruGenEnabled.empty());
  EXPECT_TRUE(a.lruProblem.empty()) << a.lruProblem;
  EXPECT_FALSE(a.damon);
  EXPECT_FALSE(a.damonReclaim.present);
  EXPECT_FALSE(a.damonStat.present);
  const std::string text = describeAccess(a);
  EXPECT_TRUE(has(text, "lru: classic (no MGLRU in this kernel")) << text;
  EXPECT_TRUE(has(text, "damon: no\n")) << text;
  EXPECT_TRUE(accessJson(a)["damon_sees_read"].is_null());
  EXPECT_TRUE(has(text, "damon_reclaim: not in this kernel")) << text;
  EXPECT_TRUE(has(text, "access_used: refaults")) << text;
}

// MGLRU switched off (or a kernel without it) and DAMON: a read() clears the idle flag again.
TEST(KernelAccess, DamonOnTheClassicLruSeesReads) {
  Fixture fx;
  fx.write("sys/kernel/mm/lru_gen/enabled", "0x0000\n");
  fx.mkdir("sys/kernel/mm/damon/admin");
  const KernelAccess a = probeAccess(fx.path("sys"));
  EXPECT_TRUE(has(describeAccess(a), "damon: yes (/sys/kernel/mm/damon/admin)\n")) << describeAccess(a);
  EXPECT_EQ(accessJson(a)["damon_sees_read"], true);
  fx.write("sys/kernel/mm/lru_gen/enabled", "0x0001\n");
  EXPECT_EQ(accessJson(probeAccess(fx.path("sys")))["damon_sees_read"], false);
}

TEST(KernelAccess, MglruBuiltButOffIsClassic) {
  Fixture fx;
  fx.write("sys/kernel/mm/lru_gen/enabled", "0x0000\n");
  const KernelAccess a = probeAccess(fx.path("sys"));
  EXPECT_FALSE(a.multiGen);
  EXPECT_EQ(a.lruGenEnabled, "0x0000");
  EXPECT_TRUE(has(describeAccess(a), "lru: classic (/sys/kernel/mm/lru_gen/enabled 0x0000: built, off; "
                                     "`echo y > /sys/kernel/mm/lru_gen/enabled` switches it on)\n"))
      << describeAccess(a);
  EXPECT_EQ(accessJson(a)["lru"], "classic");
}

TEST(KernelAccess, NewestKernelWithDamonStatRunning) {
  Fixture fx;
  newest(fx);
  const KernelAccess a = probeAccess(fx.path("sys"));
  EXPECT_TRUE(a.multiGen);
  EXPECT_TRUE(a.damon);
  ASSERT_TRUE(a.damonReclaim.present);
  EXPECT_EQ(a.damonReclaim.get("min_age"), "120000000");
  EXPECT_EQ(a.damonStat.get("enabled"), "Y");
  const std::string text = describeAccess(a);
  EXPECT_TRUE(has(text, "lru: multi-gen (/sys/kernel/mm/lru_gen/enabled 0x0007)")) << text;
  EXPECT_TRUE(has(text, "damon: yes (/sys/kernel/mm/damon/admin); with MGLRU on it sees accesses through mappings "
                        "only, not read()\n"))
      << text;
  EXPECT_TRUE(has(text, "damon_reclaim: enabled=N min_age=120000000 wmarks_high=500 bytes_reclaimed_regions=0\n"))
      << text;
  EXPECT_TRUE(has(text, "damon_stat: enabled=Y (DAMON_RECLAIM stays off while it runs")) << text;
  const nlohmann::json j = accessJson(a);
  EXPECT_EQ(j["lru"], "multi-gen");
  EXPECT_EQ(j["lru_gen_enabled"], "0x0007");
  EXPECT_EQ(j["damon_sees_read"], false);
  EXPECT_EQ(j["damon_reclaim"]["parameters"]["wmarks_high"], "500");
  EXPECT_EQ(j["damon_stat"]["parameters"]["enabled"], "Y");
}

TEST(KernelAccess, BadFilesAreSaidNotFatal) {
  Fixture fx;
  fx.write("sys/kernel/mm/lru_gen/enabled", "yes please\n");
  fx.mkdir("sys/module/damon_reclaim/parameters/enabled");  // a directory where a value belongs
  fx.write("sys/module/damon_stat/parameters/memory_idle_ms_percentiles", std::string(5000, '7'));
  const KernelAccess a = probeAccess(fx.path("sys"));
  EXPECT_FALSE(a.multiGen);
  EXPECT_TRUE(has(a.lruProblem, "not a number")) << a.lruProblem;
  EXPECT_EQ(accessJson(a)["lru"], "unknown");
  EXPECT_TRUE(has(a.damonReclaim.get("enabled"), "unreadable")) << a.damonReclaim.get("enabled");
  EXPECT_LT(a.damonStat.get("memory_idle_ms_percentiles").size(), 300u) << "a long value is cut";
  EXPECT_TRUE(has(describeAccess(a), "lru: unknown (")) << describeAccess(a);
}

TEST(KernelAccess, FileAccessSaysWhatWasMarkedAndWhatWasRefused) {
  FileAccess f;
  f.watched = {"ext4 / (254:0)", "xfs /data (259:3)"};
  f.refused = {"squashfs /snap/core/1 (7:1): fanotify_mark /snap/core/1: Operation not supported"};
  KernelAccess a;
  a.files = f;
  const std::string text = describeAccess(a);
  EXPECT_TRUE(has(text, "file_access: fanotify on ext4 / (254:0), xfs /data (259:3); refused: squashfs /snap/core/1 "
                        "(7:1): fanotify_mark /snap/core/1: Operation not supported\n"))
      << text;
  const nlohmann::json j = accessJson(a)["file_access"];
  EXPECT_EQ(j["available"], true);
  EXPECT_EQ(j["watched"].size(), 2u);
  EXPECT_EQ(j["refused"].size(), 1u);
  EXPECT_FALSE(j.contains("problem"));
  a.files = FileAccess{{}, {}, "fanotify_init: Operation not permitted; run as root"};
  EXPECT_TRUE(has(describeAccess(a), "file_access: no (fanotify_init: Operation not permitted; run as root)\n"))
      << describeAccess(a);
  EXPECT_EQ(accessJson(a)["file_access"]["problem"], "fanotify_init: Operation not permitted; run as root");
  // A group made, every filesystem refused: the refusals are the reason.
  a.files = FileAccess{{}, {"vfat /boot/efi (8:1): fanotify_mark /boot/efi: Invalid argument"}, ""};
  EXPECT_TRUE(has(describeAccess(a), "file_access: no; refused: vfat /boot/efi (8:1): fanotify_mark /boot/efi: "
                                     "Invalid argument\n"))
      << describeAccess(a);
}

TEST(KernelAccess, FileAccessWithoutAMountTableOrABlockFilesystemSaysWhy) {
  Fixture fx;
  const FileAccess none = probeFiles(fx.path("mountinfo"));
  EXPECT_FALSE(none.available());
  EXPECT_TRUE(has(none.problem, fx.path("mountinfo"))) << none.problem;
  fx.write("mountinfo", "24 22 0:22 / /run rw - tmpfs tmpfs rw\n25 22 0:20 / /proc rw - proc proc rw\n");
  const FileAccess pseudo = probeFiles(fx.path("mountinfo"));
  EXPECT_FALSE(pseudo.available());
  EXPECT_EQ(pseudo.problem, "no filesystem on a block device is mounted");
  fx.write("mountinfo", "24 22 0:22 / /run rw - tmpfs tmpfs rw\n25 22 0:20 / /proc rw proc proc rw\n");
  EXPECT_TRUE(has(probeFiles(fx.path("mountinfo")).problem, "malformed")) << probeFiles(fx.path("mountinfo")).problem;
}

// The test's own directory, listed as a block device's mount: marked where fanotify may be used
// here (root, a filesystem that names files by handle), and said why not elsewhere. A mount
// point that is gone is refused with its reason either way.
TEST(KernelAccess, FileAccessMarksTheMountsItCan) {
  Fixture fx;
  fx.mkdir("mnt");
  fx.write("mountinfo", "22 1 254:0 / " + fx.path("mnt") + " rw - ext4 /dev/vda1 rw\n" +
                            "23 1 254:1 / " + fx.path("gone") + " rw - ext4 /dev/vdb rw\n");
  const FileAccess f = probeFiles(fx.path("mountinfo"));
  if (!f.problem.empty()) {
    EXPECT_TRUE(has(f.problem, "fanotify_init")) << f.problem;
    EXPECT_FALSE(f.available());
    return;
  }
  ASSERT_EQ(f.refused.size(), 1u);
  EXPECT_TRUE(has(f.refused[0], "ext4 " + fx.path("gone") + " (254:1): open " + fx.path("gone"))) << f.refused[0];
  if (f.watched.empty()) {
    EXPECT_FALSE(f.available());
    return;
  }
  EXPECT_TRUE(f.available());
  EXPECT_EQ(f.watched, std::vector<std::string>{"ext4 " + fx.path("mnt") + " (254:0)"});
}

TEST(KernelAccess, ProbeCommandPrintsItAsTextAndJson) {
  Fixture fx;
  testing::SimFiles machine(fx);
  newest(fx);
  const std::vector<std::string> base = {RECLAIMD_BINARY, "probe", "--proc-root", fx.path("proc"),
                                         "--cgroup-root", fx.path("cg"), "--sys-root", fx.path("sys")};
  auto [code, out] = testing::runCommand(base);
  EXPECT_EQ(code, 0) << out;
  EXPECT_TRUE(has(out, "lru: multi-gen")) << out;
  EXPECT_TRUE(has(out, "damon_stat: enabled=Y")) << out;
  EXPECT_TRUE(has(out, "file_access: ")) << out;
  std::vector<std::string> json = base;
  json.push_back("--json");
  auto [jcode, jout] = testing::runCommand(json);
  EXPECT_EQ(jcode, 0) << jout;
  const nlohmann::json j = nlohmann::json::parse(jout, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << jout;
  EXPECT_EQ(j["kernel_access"]["lru"], "multi-gen");
  EXPECT_EQ(j["kernel_access"]["damon"], true);
  EXPECT_TRUE(j["kernel_access"]["file_access"].contains("available")) << jout;
  EXPECT_EQ(j["effective_mode"], "gradual");
  EXPECT_EQ(j["memory_reclaim"], true);
}

}  // namespace
}  // namespace reclaimd::controller

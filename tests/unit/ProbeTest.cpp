// The capability probe on fixture trees: what it finds and how it says what is missing.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "controller/Probe.h"
#include "controller/engine/ModeChoice.h"
#include "tests/unit/Fixture.h"

namespace reclaimd::controller {
namespace {

// A proc root and a cgroup2 root with everything a 6.12 kernel offers. Regular files accept
// every write, so the keyed zero-byte request "succeeds" as on 6.12; the EINVAL of 6.1 is
// shown by the VM tests on the real kernel.
struct Tree {
  testing::Fixture fx;
  Tree() {
    fx.write("proc/stat", testing::procStat(100, 50, 10000));
    fx.write("proc/meminfo", testing::meminfo(2048, 1000, 300, 200, 50));
    fx.write("proc/pressure/memory",
             "some avg10=0.00 avg60=0.00 avg300=0.00 total=0\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n");
    fx.write("proc/sys/vm/drop_caches", "");
    fx.write("proc/sys/vm/compact_memory", "");
    fx.write("proc/self/mountinfo", "30 25 0:26 / " + fx.path("cg") + " rw - cgroup2 cgroup2 rw\n");
    fx.write("cg/cgroup.controllers", "cpuset cpu io memory pids\n");
    fx.write("cg/memory.reclaim", "");
  }
  Paths paths() const { return Paths{fx.path("proc"), ""}; }
};

TEST(Probe, FindsEverythingOnAFullTree) {
  Tree t;
  Capabilities c = probe(t.paths());
  EXPECT_EQ(c.cgroupRoot, t.fx.path("cg")) << "found through mountinfo";
  EXPECT_TRUE(c.memoryController);
  EXPECT_TRUE(c.reclaimWritable) << c.reclaimProblem;
  EXPECT_EQ(c.swappinessKey, KeySupport::Supported);
  EXPECT_FALSE(c.swapActive);
  EXPECT_TRUE(c.psiAvailable);
  EXPECT_TRUE(c.compactMemory);
  EXPECT_TRUE(c.dropCaches);
  EXPECT_EQ(t.fx.read("cg/memory.reclaim"), "0 swappiness=0") << "only zero-byte requests were written";
  EXPECT_EQ(t.fx.read("proc/sys/vm/drop_caches"), "") << "drop_caches is never written by the probe";
  EXPECT_EQ(chooseMode(policies::Mode::Gradual, c).mode, policies::Mode::Gradual);
}

TEST(Probe, HybridMountHasNoMemoryReclaim) {
  Tree t;
  t.fx.write("cg/cgroup.controllers", "\n");
  t.fx.remove("cg/memory.reclaim");
  Capabilities c = probe(t.paths());
  EXPECT_FALSE(c.memoryController);
  EXPECT_NE(c.cgroupProblem.find("hybrid"), std::string::npos) << c.cgroupProblem;
  EXPECT_FALSE(c.reclaimWritable);
  EXPECT_NE(c.reclaimProblem.find("memory.reclaim"), std::string::npos) << c.reclaimProblem;
  EffectiveMode m = chooseMode(policies::Mode::Gradual, c);
  EXPECT_EQ(m.mode, policies::Mode::DropCache);
  EXPECT_NE(m.reason.find("memory.reclaim is unavailable"), std::string::npos) << m.reason;
}

TEST(Probe, NoCgroup2Mount) {
  Tree t;
  t.fx.write("proc/self/mountinfo", "22 1 254:0 / / rw - ext4 /dev/vda rw\n");
  Capabilities c = probe(t.paths());
  EXPECT_TRUE(c.cgroupRoot.empty());
  EXPECT_NE(c.cgroupProblem.find("no cgroup2"), std::string::npos);
  EXPECT_FALSE(c.reclaimWritable);
}

TEST(Probe, MalformedMountinfoIsReportedNotFatal) {
  Tree t;
  t.fx.write("proc/self/mountinfo", "garbage line\n");
  Capabilities c = probe(t.paths());
  EXPECT_TRUE(c.cgroupRoot.empty());
  EXPECT_NE(c.cgroupProblem.find("mountinfo"), std::string::npos) << c.cgroupProblem;
}

TEST(Probe, ExplicitCgroupRootSkipsMountinfo) {
  Tree t;
  t.fx.remove("proc/self");
  Capabilities c = probe(Paths{t.fx.path("proc"), t.fx.path("cg")});
  EXPECT_TRUE(c.reclaimWritable);
}

TEST(Probe, PsiDisabledSaysHowToEnableIt) {
  Tree t;
  t.fx.remove("proc/pressure");
  Capabilities c = probe(t.paths());
  EXPECT_FALSE(c.psiAvailable);
  EXPECT_NE(c.psiProblem.find("psi=1"), std::string::npos);
}

TEST(Probe, SwapAndMissingCompaction) {
  Tree t;
  t.fx.write("proc/meminfo", testing::meminfo(2048, 1000, 300, 200, 50, 1024));
  t.fx.remove("proc/sys/vm/compact_memory");
  Capabilities c = probe(t.paths());
  EXPECT_TRUE(c.swapActive);
  EXPECT_FALSE(c.compactMemory);
  const std::string text = describe(c);
  EXPECT_NE(text.find("compact_memory: no (open " + t.fx.path("proc/sys/vm/compact_memory") + ": No such file"),
            std::string::npos)
      << text;
}

TEST(Probe, UnreadableMeminfoSaysWhySwapIsUnknown) {
  Tree t;
  t.fx.write("proc/meminfo", "MemTotal: lots\n");
  Capabilities c = probe(t.paths());
  EXPECT_FALSE(c.swapActive);
  EXPECT_NE(describe(c).find("swap_active: no (/proc/meminfo: malformed MemTotal line"), std::string::npos)
      << describe(c);
  t.fx.remove("proc/meminfo");
  c = probe(t.paths());
  EXPECT_NE(c.swapProblem.find("meminfo: No such file"), std::string::npos) << c.swapProblem;
  EXPECT_EQ(describeJson(c).value("swap_active_problem", ""), c.swapProblem) << "--json says it too";
}

TEST(Probe, SymlinkedControlFilesAreRefused) {
  Tree t;
  t.fx.write("outside/victim", "precious\n");
  t.fx.remove("cg/memory.reclaim");
  t.fx.remove("proc/sys/vm/drop_caches");
  std::filesystem::create_symlink(t.fx.path("outside/victim"), t.fx.path("cg/memory.reclaim"));
  std::filesystem::create_symlink(t.fx.path("outside/victim"), t.fx.path("proc/sys/vm/drop_caches"));
  Capabilities c = probe(t.paths());
  EXPECT_FALSE(c.reclaimWritable);
  EXPECT_NE(c.reclaimProblem.find("refused"), std::string::npos) << c.reclaimProblem;
  EXPECT_FALSE(c.dropCaches);
  EXPECT_NE(c.dropCachesProblem.find("refused"), std::string::npos) << c.dropCachesProblem;
  EXPECT_EQ(t.fx.read("outside/victim"), "precious\n") << "the zero-byte probe request did not land outside";
}

TEST(Probe, DescribeListsEveryCapability) {
  Tree t;
  const std::string text = describe(probe(t.paths()));
  for (const char* key : {"cgroup2_root:", "memory_controller: yes", "memory_reclaim: writable", "swappiness_key: yes",
                          "swap_active: no", "psi: yes", "compact_memory: yes", "drop_caches: writable"}) {
    EXPECT_NE(text.find(key), std::string::npos) << key << "\n" << text;
  }
}

// Refaults count pages and reclaimd's figures are bytes: the page size it converts with is the
// kernel's, and probe says which it is (arm64 kernels may have 16 or 64 KiB pages).
TEST(Probe, SaysThePageSizeItCountsIn) {
  Tree t;
  Capabilities c = probe(t.paths());
  EXPECT_EQ(c.pageBytes, static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE)));
  c.pageBytes = 65536;
  EXPECT_NE(describe(c).find("\npage_size: 65536\n"), std::string::npos) << describe(c);
  EXPECT_EQ(describeJson(c).value("page_size", 0ULL), 65536u);
}

}  // namespace
}  // namespace reclaimd::controller

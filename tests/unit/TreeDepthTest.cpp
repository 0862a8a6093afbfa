// The walk's memory and work are bounded by its node cap, whatever the tree's depth: a chain of
// nested cgroups with long names (which any user with a delegated subtree can make) is walked
// down to PATH_MAX and no further, and a node holds its name, not its whole path.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "base/UniqueFd.h"
#include "cgroup/Tree.h"
#include "controller/shell/BusyScan.h"
#include "tests/unit/Fixture.h"

namespace reclaimd::controller {
namespace {

// A component of the longest name a filesystem takes (NAME_MAX).
std::string longName(int depth) {
  std::string name = "level" + std::to_string(depth) + "-";
  name.resize(255, 'x');
  return name;
}

// Makes a chain of `depth` nested directories of 255-byte names below `dir`, one mkdirat at a
// time from the parent's fd (the deep paths are longer than any single call resolves).
void makeChain(int dir, int depth) {
  UniqueFd current(::dup(dir));
  for (int i = 0; i < depth; ++i) {
    const std::string name = longName(i);
    ASSERT_EQ(::mkdirat(current.get(), name.c_str(), 0755), 0) << errno;
    current = UniqueFd(::openat(current.get(), name.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    ASSERT_TRUE(current) << errno;
  }
}

// Writes a cpu.stat saying `usec` into every directory of the chain of `depth` below `dir`.
void writeCpuStats(int dir, int depth, const std::string& usec) {
  const std::string text = "usage_usec " + usec + "\nuser_usec 0\nsystem_usec 0\n";
  UniqueFd current(::dup(dir));
  for (int i = 0; i < depth; ++i) {
    current = UniqueFd(::openat(current.get(), longName(i).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    ASSERT_TRUE(current) << errno;
    UniqueFd file(::openat(current.get(), "cpu.stat", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
    ASSERT_TRUE(file) << errno;
    ASSERT_EQ(::write(file.get(), text.data(), text.size()), static_cast<ssize_t>(text.size())) << errno;
  }
}

// Removes the chain (and any cpu.stat in it) from the bottom up, again through fds (the fixture's recursive removal
// goes by whole paths, which stop at PATH_MAX).
void removeChain(int dir, int depth) {
  std::vector<UniqueFd> fds;
  fds.emplace_back(::dup(dir));
  for (int i = 0; i + 1 < depth; ++i)
    fds.emplace_back(::openat(fds.back().get(), longName(i).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  for (int i = depth - 1; i >= 0; --i) {
    const int parent = fds[static_cast<std::size_t>(i)].get();
    ::unlinkat(parent, (longName(i) + "/cpu.stat").c_str(), 0);  // where writeCpuStats put one
    ::unlinkat(parent, longName(i).c_str(), AT_REMOVEDIR);
  }
}

TEST(TreeDepth, ADeepChainIsWalkedDownToPathMaxAndHoldsNamesOnly) {
  testing::Fixture fx;
  fx.mkdir("cg");
  UniqueFd root(::open(fx.path("cg").c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  constexpr int kDepth = 64;  // 16 KiB of path at the bottom
  makeChain(root.get(), kDepth);
  auto tree = cgroup::walkTree(root.get());
  ASSERT_TRUE(tree.ok()) << tree.error().message();
  // Depth k has a path of 256k - 1 bytes: 16 levels fit in PATH_MAX, the 17th does not.
  EXPECT_EQ(tree->nodes.size(), 17u);
  EXPECT_EQ(tree->incomplete, 1u);
  ASSERT_TRUE(tree->incompleteError);
  EXPECT_EQ(tree->incompleteError->errnoValue(), ENAMETOOLONG);
  EXPECT_TRUE(tree->nodes.back().incomplete) << "below it is unknown, so nothing above it is a target";
  std::size_t held = 0;
  for (std::size_t i = 0; i < tree->nodes.size(); ++i) {
    held += tree->nodes[i].name.size();
    EXPECT_LE(tree->path(i).size(), cgroup::kMaxWalkPath);
  }
  EXPECT_LE(held, tree->nodes.size() * 255) << "a name per node, not a path";
  EXPECT_EQ(tree->path(tree->nodes.size() - 1).size(), 16u * 256 - 1);

  // The CPU scan walks the same way: the chain makes it incomplete, and no path it keeps is
  // longer than the walk's.
  auto scan = scanCgroupCpu(root.get());
  ASSERT_TRUE(scan.ok()) << scan.error().message();
  EXPECT_FALSE(scan->complete);
  for (const CgroupCpu& c : scan->cgroups)
    EXPECT_LE(c.path.size(), cgroup::kMaxWalkPath);
  removeChain(root.get(), kDepth);
}

// A chain that just fits PATH_MAX is walked whole, and so is read whole: the deepest cgroup's
// cpu.stat lies past PATH_MAX from the root, further than one openat2 resolves.
TEST(TreeDepth, ACgroupWhoseCpuStatLiesPastPathMaxIsStillRead) {
  testing::Fixture fx;
  fx.mkdir("cg");
  UniqueFd root(::open(fx.path("cg").c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  constexpr int kDepth = 16;  // the deepest path is 16 * 256 - 1 = 4095 bytes
  makeChain(root.get(), kDepth);
  writeCpuStats(root.get(), kDepth, "7");
  auto tree = cgroup::walkTree(root.get());
  ASSERT_TRUE(tree.ok()) << tree.error().message();
  ASSERT_EQ(tree->nodes.size(), kDepth + 1u);
  ASSERT_EQ(tree->incomplete, 0u);
  for (ScanOpens opens : {ScanOpens::Beneath, ScanOpens::ByDirectory}) {
    auto scan = scanCgroupCpu(root.get(), kBusyScanMaxCgroups, opens);
    ASSERT_TRUE(scan.ok()) << scan.error().message();
    EXPECT_TRUE(scan->complete) << "every cgroup the walk found was read";
    ASSERT_EQ(scan->cgroups.size(), static_cast<std::size_t>(kDepth)) << "all but the root, which has no cpu.stat";
    EXPECT_EQ(scan->cgroups.back().path.size(), 16u * 256 - 1);
    EXPECT_EQ(scan->cgroups.back().usage, std::chrono::microseconds(7));
  }
  removeChain(root.get(), kDepth);
}

}  // namespace
}  // namespace reclaimd::controller

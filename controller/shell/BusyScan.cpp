#include "controller/shell/BusyScan.h"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <new>
#include <string>
#include <vector>

#include "base/Files.h"
#include "base/UniqueFd.h"
#include "cgroup/ControlFiles.h"
#include "cgroup/Reclaim.h"
#include "cgroup/Stat.h"
#include "cgroup/Tree.h"

namespace reclaimd::controller {

namespace {

using std::chrono::nanoseconds;

// cpu.stat is 100-400 bytes (usage, user, system; the cpu controller adds throttling and burst
// lines): a file that fills this is not one, and is skipped rather than read without bound.
constexpr std::size_t kCpuStatBytes = 4096;

// Opens `path`/cpu.stat below `rootFd` in one openat2 (Linux 5.6): no symlink on the way
// (RESOLVE_NO_SYMLINKS), nothing outside the root (RESOLVE_BENEATH) and no other mount
// (RESOLVE_NO_XDEV), so only a file the kernel made in the cgroup filesystem, where mknod and
// symlink are not supported; O_NONBLOCK so that even a FIFO in a test tree cannot block. One
// syscall instead of a directory open, a file open and an fstat: the scan's cost is its opens.
// Returns the fd, or -1 with errno set.
int openBeneath(int rootFd, const std::string& path) {
  const std::string file = path.empty() ? cgroup::kCpuStat : path + "/" + cgroup::kCpuStat;
  struct open_how how {};
  how.flags = O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC;
  how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV;
  return static_cast<int>(::syscall(SYS_openat2, rootFd, file.c_str(), &how, sizeof how));
}

// openat2 is missing (ENOSYS before 5.6) or filtered (EPERM from an old container seccomp
// profile): the scan opens directory by directory instead.
bool noOpenat2(int err) {
  return err == ENOSYS || err == EPERM;
}

// One read of an open cpu.stat:
// usage_usec 8734201
// user_usec 6120000
Result<nanoseconds> readUsage(int fd, const std::string& path) {
  char buffer[kCpuStatBytes];
  const ssize_t n = ::pread(fd, buffer, sizeof buffer, 0);
  if (n < 0) return errnoError(errno, "read " + path + "/cpu.stat");
  if (static_cast<std::size_t>(n) == sizeof buffer) return errnoError(EFBIG, "read " + path + "/cpu.stat");
  auto stat = cgroup::parseCpuStat(std::string_view(buffer, static_cast<std::size_t>(n)));
  if (!stat) return stat.error();
  return stat->usage();
}

// Adds what `node`'s open cpu.stat says (or, for an error other than "gone", marks the scan
// incomplete). The inode is the walk's: a cgroup replaced between the walk and this read is
// read under its old inode, which the ranking takes as a counter reset (counted from zero).
void add(const cgroup::TreeNode& node, std::string path, Result<nanoseconds> usage, CgroupCpuScan& scan) {
  if (!usage) {
    if (!cgroup::cgroupGone(usage.error())) scan.complete = false;
    return;
  }
  scan.cgroups.push_back(CgroupCpu{std::move(path), node.inode, *usage});
}

// Opens `path`/cpu.stat in one openat2, or, where that path is longer than one call resolves (a
// cgroup the walk found within PATH_MAX, whose cpu.stat lies past it), a directory at a time.
Result<UniqueFd> openCpuStat(int rootFd, const std::string& path) {
  UniqueFd fd(openBeneath(rootFd, path));
  if (fd) return fd;
  if (errno != ENAMETOOLONG) return errnoError(errno, "open " + path + "/cpu.stat");
  auto dir = cgroup::openCgroupDir(rootFd, path);
  if (!dir) return dir.error();
  return openRegular(dir->get(), cgroup::kCpuStat, O_RDONLY | O_NONBLOCK);
}

void scanBeneath(int rootFd, const cgroup::Tree& tree, CgroupCpuScan& scan) {
  for (std::size_t i = 0; i < tree.nodes.size(); ++i) {
    const cgroup::TreeNode& node = tree.nodes[i];
    std::string path = tree.path(i);
    // ENOENT/ENODEV: gone since the walk. ELOOP/EXDEV (a symlink or a mount planted since),
    // EAGAIN (a rename raced the lookup), EMFILE, EACCES: unread.
    auto file = openCpuStat(rootFd, path);
    auto usage = file ? readUsage(file->get(), path) : Result<nanoseconds>(file.error());
    add(node, std::move(path), std::move(usage), scan);
  }
}

// A directory on the path from the root to the node being read.
struct Open {
  int node = -1;   // index in the walk
  int fd = -1;     // -1: it could not be opened, so neither can anything below it
  UniqueFd owned;  // empty for the root (the caller's fd)
};

// Without openat2: pre-order puts a node's parent on this chain when the node is reached, so
// each directory is opened once, one component below its parent's with O_NOFOLLOW, and at most
// the tree's depth is open at a time (a thousand cgroups kept open were a thousand fds).
void scanByChain(int rootFd, const cgroup::Tree& tree, CgroupCpuScan& scan) {
  std::vector<Open> chain;
  for (std::size_t i = 0; i < tree.nodes.size(); ++i) {
    const cgroup::TreeNode& node = tree.nodes[i];
    while (!chain.empty() && chain.back().node != node.parent)
      chain.pop_back();
    Open open{static_cast<int>(i), rootFd, UniqueFd()};
    if (node.parent >= 0) {
      const int parentFd = chain.empty() ? -1 : chain.back().fd;
      if (parentFd >= 0) {
        open.owned = UniqueFd(::openat(parentFd, node.name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
        if (!open.owned) add(node, "", errnoError(errno, "open " + node.name), scan);
      }
      open.fd = open.owned.get();
    }
    if (open.fd >= 0) {
      std::string path = tree.path(i);
      auto file = openRegular(open.fd, cgroup::kCpuStat, O_RDONLY | O_NONBLOCK);
      auto usage = file ? readUsage(file->get(), path) : Result<nanoseconds>(file.error());
      add(node, std::move(path), std::move(usage), scan);
    }
    chain.push_back(std::move(open));
  }
}

}  // namespace

Result<CgroupCpuScan> scanCgroupCpu(int rootFd, std::size_t maxCgroups, ScanOpens opens) try {
  auto tree = cgroup::walkTree(rootFd, maxCgroups);
  if (!tree) return tree.error();
  CgroupCpuScan scan;
  scan.complete = !tree->truncated && tree->incomplete == 0;
  scan.cgroups.reserve(tree->nodes.size());
  UniqueFd probe(opens == ScanOpens::Beneath ? openBeneath(rootFd, "") : -1);
  if (opens == ScanOpens::ByDirectory || (!probe && noOpenat2(errno))) {
    scanByChain(rootFd, *tree, scan);
  } else {
    scanBeneath(rootFd, *tree, scan);
  }
  return scan;
} catch (const std::bad_alloc&) {
  return errnoError(ENOMEM, "scan the cgroups' CPU");
}

}  // namespace reclaimd::controller

// Walking the cgroup v2 tree.
//
// reclaimd walks the tree itself rather than with libcgroup's cgroup_walk_tree_*: libcgroup
// 2.0.2 builds the start path from the controller's mount table (which puts "memory" on v1
// on hybrid hosts), cannot walk an arbitrary root such as a test fixture, and walks with
// fts(FTS_LOGICAL), which follows symlinks. Here: getdents64 on directory fds, d_type and
// d_ino from the entries (no stat per cgroup), openat(O_NOFOLLOW) one component at a time.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "base/Result.h"
#include "base/UniqueFd.h"

namespace reclaimd::cgroup {

struct TreeNode {
  // The last component of the cgroup's path ("cron.service"; "" for the root): the path is built on
  // demand (Tree::path), so a tree holds at most 255 bytes of name per node whatever its depth,
  // where whole paths cost the sum of their lengths (a deep chain: depth squared).
  std::string name;
  std::uint64_t inode = 0;  // the cgroup's identity: a cgroup made again under the same name is new
  int parent = -1;          // index of the parent node; -1 for the root
  std::vector<int> children;
  // The walk could not list this cgroup (EMFILE, ENFILE, EACCES...) or stopped at maxNodes
  // among its children: what lies below it is unknown, and no reclaim target may contain it.
  bool incomplete = false;
  // The walk was told nothing below this cgroup matters (Descend): its children are not listed.
  bool unlisted = false;
};

struct Tree {
  std::vector<TreeNode> nodes;  // pre-order: a parent before its children; nodes[0] is the root
  std::size_t vanished = 0;     // cgroups removed while being walked (skipped quietly)
  std::size_t symlinks = 0;     // entries that are symlinks (never followed)
  bool truncated = false;       // stopped at maxNodes (the node it stopped in is incomplete)
  std::size_t incomplete = 0;   // nodes marked incomplete
  int incompleteErrno = 0;      // the first errno that cut the walk (0: only maxNodes did)

  // The path of node `index` relative to the root ("" for the root, "system.slice/cron.service").
  std::string path(int index) const;
  std::string path(std::size_t index) const { return path(static_cast<int>(index)); }
};

// The longest path (relative to the root) the walk goes to: PATH_MAX, the longest path the kernel
// resolves in one call (an openat2 of a deeper cgroup's cpu.stat fails with ENAMETOOLONG). A cgroup
// whose path would be longer is not added, and its parent is incomplete (errno ENAMETOOLONG), so
// a chain of nested cgroups costs a walk at most this many bytes of path per node it holds.
inline constexpr std::size_t kMaxWalkPath = 4096;

// Whether the walk must look below the cgroup at `path` (relative): false when nothing there could
// change a decision (no rule can match a descendant), so a 10,000-cgroup tree whose rules name
// its pods is not listed down to every container. Empty: look everywhere.
using Descend = std::function<bool(std::string_view path)>;

// Walks every cgroup below the directory `rootFd` (and below a cgroup only where `descend` says). Only a failure to
// read the root itself is an error (and running out of memory: ENOMEM, never an exception); anything below that vanishes mid-walk (ENOENT/ENODEV) is skipped and counted, and a
// directory that cannot be opened or listed for any other reason (EMFILE, ENFILE, EACCES...)
// is kept as an incomplete node: its subtree is unknown, not gone.
Result<Tree> walkTree(int rootFd, std::size_t maxNodes = 1'000'000, const Descend& descend = {});

// Opens cgroup directory `path` (relative, "" for the root itself) below `rootFd`, one
// component at a time with O_NOFOLLOW, so no symlink is ever followed. Errors: the openat errno
// (ENOENT/ENODEV: the cgroup is gone; ELOOP/ENOTDIR: a symlink or a file on the way).
Result<UniqueFd> openCgroupDir(int rootFd, std::string_view path);

// The inode of an open directory. Errors: the fstat errno.
Result<std::uint64_t> inodeOf(int fd);

}  // namespace reclaimd::cgroup

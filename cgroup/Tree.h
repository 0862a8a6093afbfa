// Walking the cgroup v2 tree.
//
// reclaimd walks the tree itself rather than with libcgroup's cgroup_walk_tree_*: libcgroup
// 2.0.2 builds the start path from the controller's mount table (which puts "memory" on v1
// on hybrid hosts), cannot walk an arbitrary root such as a test fixture, and walks with
// fts(FTS_LOGICAL), which follows symlinks. Here: getdents64 on directory fds, d_type and
// d_ino from the entries (no stat per cgroup), openat(O_NOFOLLOW) one component at a time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "base/Result.h"
#include "base/UniqueFd.h"
#include "cgroup/TreeNodes.h"

namespace reclaimd::cgroup {

// The longest path (relative to the root) the walk goes to: PATH_MAX, the longest path the kernel
// resolves in one call (an openat2 of a deeper cgroup's cpu.stat fails with ENAMETOOLONG). A cgroup
// whose path would be longer is not added, and its parent is incomplete (errno ENAMETOOLONG), so
// a chain of nested cgroups costs a walk at most this many bytes of path per node it holds.
inline constexpr std::size_t kMaxWalkPath = 4096;

// Walks every cgroup below the directory `rootFd` (and below a cgroup only where `descend` says). Only a failure to
// read the root itself is an error (and running out of memory: ENOMEM, never an exception); anything below that
// vanishes mid-walk (ENOENT/ENODEV) is skipped and counted, and a directory that cannot be opened or listed for any
// other reason (EMFILE, ENFILE, EACCES...) is kept as an incomplete node: its subtree is unknown, not gone.
Result<Tree> walkTree(int rootFd, std::size_t maxNodes = 1'000'000, const Descend& descend = {});

// Opens cgroup directory `path` (relative, "" for the root itself) below `rootFd`, one
// component at a time with O_NOFOLLOW, so no symlink is ever followed. Errors: the openat errno
// (ENOENT/ENODEV: the cgroup is gone; ELOOP/ENOTDIR: a symlink or a file on the way).
Result<UniqueFd> openCgroupDir(int rootFd, std::string_view path);

// The inode of an open directory. Errors: the fstat errno.
Result<std::uint64_t> inodeOf(int fd);

}  // namespace reclaimd::cgroup

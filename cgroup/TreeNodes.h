// The cgroup v2 tree as plain data: what a walk found (cgroup/Tree.h walks it), for the
// decisions that choose targets from it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/Result.h"

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
  // The first error that cut the walk, naming the cgroup (none: only maxNodes did).
  std::optional<Error> incompleteError;

  // The path of node `index` relative to the root ("" for the root, "system.slice/cron.service").
  std::string path(int index) const;
  std::string path(std::size_t index) const { return path(static_cast<int>(index)); }
};

// Whether the walk must look below the cgroup at `path` (relative): false when nothing there could
// change a decision (no rule can match a descendant), so a 10,000-cgroup tree whose rules name
// its pods is not listed down to every container. Empty: look everywhere.
using Descend = std::function<bool(std::string_view path)>;

}  // namespace reclaimd::cgroup

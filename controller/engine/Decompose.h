// Where to write reclaim requests, given the tree and each cgroup's governing rule. Pure.
//
// memory.reclaim on a cgroup reclaims from its whole subtree. So a request goes to the highest
// cgroup whose whole subtree is governed by one rule (a "target"); where a subtree mixes rules
// (a disabled child under a gradual parent) reclaimd descends and writes at the children, so a
// protected cgroup is never reclaimed through its parent, and no cache is counted twice. Cache
// charged to a mixed cgroup itself cannot be reached without reaching its children: it is left.
// A node the walk could not list (TreeNode::incomplete) has an unknown subtree: its ancestors
// count as mixed, and no target is chosen at or below it, so a protected cgroup the walk did
// not see is never reclaimed through an ancestor.
#pragma once

#include <vector>

#include "cgroup/TreeNodes.h"

namespace reclaimd::controller {

struct TargetSpec {
  int node = 0;   // index into the tree's nodes
  int rule = -1;  // the rule governing the node's whole subtree; -1 = machine-wide settings
};

// `ruleOf[i]` is node i's governing rule. Targets come in pre-order.
std::vector<TargetSpec> decompose(const cgroup::Tree& tree, const std::vector<int>& ruleOf);

}  // namespace reclaimd::controller

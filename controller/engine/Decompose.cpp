#include "controller/engine/Decompose.h"

namespace reclaimd::controller {

std::vector<TargetSpec> decompose(const cgroup::Tree& tree, const std::vector<int>& ruleOf) {
  const std::size_t n = tree.nodes.size();
  // uniform[i]: every cgroup of i's subtree is known and has i's rule. An incomplete node's
  // subtree is unknown, so it and all its ancestors are mixed. Children come after their
  // parent in pre-order, so walking backwards sees every child before its parent.
  std::vector<char> uniform(n, 1);
  for (std::size_t i = n; i-- > 0;) {
    if (tree.nodes[i].incomplete) {
      uniform[i] = 0;
      continue;
    }
    for (int c : tree.nodes[i].children) {
      const auto child = static_cast<std::size_t>(c);
      if (!uniform[child] || ruleOf[child] != ruleOf[i]) {
        uniform[i] = 0;
        break;
      }
    }
  }
  // cut[i]: i is at or below an incomplete node. Nothing there is written this walk, not even
  // a known child: the walk that could not list its parent is no ground for a write.
  std::vector<char> cut(n, 0);
  std::vector<TargetSpec> targets;
  for (std::size_t i = 0; i < n; ++i) {
    const int parent = tree.nodes[i].parent;
    cut[i] = tree.nodes[i].incomplete || (parent >= 0 && cut[static_cast<std::size_t>(parent)]);
    if (uniform[i] && !cut[i] && (parent < 0 || !uniform[static_cast<std::size_t>(parent)])) {
      targets.push_back(TargetSpec{static_cast<int>(i), ruleOf[i]});
    }
  }
  return targets;
}

}  // namespace reclaimd::controller

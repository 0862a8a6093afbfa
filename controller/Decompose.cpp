#include "controller/Decompose.h"

namespace reclaimd::controller {

std::vector<TargetSpec> decompose(const cgroup::Tree& tree, const std::vector<int>& ruleOf) {
  const std::size_t n = tree.nodes.size();
  // uniform[i]: every cgroup of i's subtree has i's rule. Children come after their parent in
  // pre-order, so walking backwards sees every child before its parent.
  std::vector<char> uniform(n, 1);
  for (std::size_t i = n; i-- > 0;) {
    for (int c : tree.nodes[i].children) {
      const auto child = static_cast<std::size_t>(c);
      if (!uniform[child] || ruleOf[child] != ruleOf[i]) {
        uniform[i] = 0;
        break;
      }
    }
  }
  std::vector<TargetSpec> targets;
  for (std::size_t i = 0; i < n; ++i) {
    const int parent = tree.nodes[i].parent;
    if (uniform[i] && (parent < 0 || !uniform[static_cast<std::size_t>(parent)])) {
      targets.push_back(TargetSpec{static_cast<int>(i), ruleOf[i]});
    }
  }
  return targets;
}

}  // namespace reclaimd::controller

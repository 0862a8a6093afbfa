#include "controller/engine/Budget.h"

#include <algorithm>

namespace reclaimd::controller {

std::vector<Share> shareBudget(std::vector<Candidate> candidates, std::uint64_t budget, std::uint64_t minimum) {
  auto above = [](const Candidate& c) { return c.reclaimable > c.floor ? c.reclaimable - c.floor : 0; };
  std::stable_sort(candidates.begin(), candidates.end(),
                   [&](const Candidate& a, const Candidate& b) { return above(a) > above(b); });
  std::vector<Share> shares;
  for (const Candidate& c : candidates) {
    const std::uint64_t bytes = std::min({above(c), c.step, budget});
    if (bytes < minimum) continue;
    shares.push_back(Share{c.target, bytes});
    budget -= bytes;
  }
  return shares;
}

}  // namespace reclaimd::controller

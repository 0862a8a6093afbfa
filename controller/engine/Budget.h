// Sharing one pass's reclaim budget among the idle targets. Pure.
//
// The RAM-scaled step (MemTotal/32 within 256 MiB..1 GiB) is a budget per pass for the whole
// machine, shared among the idle targets, largest reclaimable (above its floor) first; each
// target gets at most its own rule's step.
#pragma once

#include <cstdint>
#include <vector>

namespace reclaimd::controller {

struct Candidate {
  int target = 0;                 // caller's index
  std::uint64_t reclaimable = 0;  // bytes the target holds that reclaim can take
  std::uint64_t floor = 0;        // bytes it keeps
  std::uint64_t step = 0;         // most it may give in one pass
};

struct Share {
  int target = 0;
  std::uint64_t bytes = 0;
};

// Shares below `minimum` bytes are not handed out (not worth a write).
std::vector<Share> shareBudget(std::vector<Candidate> candidates, std::uint64_t budget, std::uint64_t minimum);

}  // namespace reclaimd::controller

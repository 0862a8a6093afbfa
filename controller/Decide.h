// What to do on one tick: a pure function of the idle verdict, the memory figures, the
// effective mode, the policy and what was already done in this idle period.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "controller/IdleDetector.h"
#include "controller/ModeChoice.h"
#include "policies/Policy.h"
#include "proc/Meminfo.h"

namespace reclaimd::controller {

// What this idle period has seen; cleared when a period ends.
struct PeriodState {
  bool compacted = false;  // compaction done since the period began
  bool dropped = false;    // dropcache done in this period
  // Reclaimable bytes when a step last freed (almost) nothing: steps pause until the cache
  // regrows past this by a chunk, instead of asking the kernel every tick for what it
  // cannot give.
  std::optional<std::uint64_t> stalledAt;
  // A step cut into the working set (refaults jumped): the floor stays at least here until
  // the period ends.
  std::optional<std::uint64_t> raisedFloor;
};

struct Plan {
  bool dropCache = false;
  std::uint64_t reclaimBytes = 0;  // 0: no step
  bool compact = false;
  std::string why;  // for the debug log when nothing is done
};

Plan decide(const IdleVerdict& verdict, const proc::Meminfo& mem, const EffectiveMode& mode,
            const policies::ReclaimSettings& settings, bool compactAvailable, const PeriodState& period);

}  // namespace reclaimd::controller

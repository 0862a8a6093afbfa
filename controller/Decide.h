// Per-idle-period state, and the dropcache mode's decision. Pure. (gradual decides per target:
// Budget.h shares a pass's budget, ReclaimStep.h cuts each share into chunks.)
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "controller/IdleDetector.h"

namespace reclaimd::controller {

// What an idle period (the machine's, or one target's) has seen; cleared when it ends.
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

struct DropPlan {
  bool dropCache = false;
  bool compact = false;
};

// dropcache: once per idle period, when the machine is idle and not under pressure, then compact
// (when enabled and the kernel has compact_memory).
DropPlan decideDrop(const IdleVerdict& verdict, const PeriodState& period, bool pressed, bool compact);

}  // namespace reclaimd::controller

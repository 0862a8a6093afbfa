// Per-idle-period state, and the dropcache mode's decision. Pure. (gradual decides per target:
// Budget.h shares a pass's budget, ReclaimStep.h cuts each share into chunks.)
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include "controller/engine/IdleDetector.h"
#include "policies/Policy.h"

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

// While the last span was busy, samples come faster than sample_period, so the grace period is
// measured from the moment work ended, not from the next regular sample. How much faster
// follows from the window's slack: it tolerates threshold x grace of busy time (0.6 s of one
// CPU for 0.5 % of 2 minutes, N times that of N busy CPUs), so sampling that often never lets
// the grace complete later than it would with the end known exactly, at under two wakeups a
// second on a busy machine instead of five. Never faster than fastestSamplePeriod.
std::chrono::nanoseconds busySamplePeriod(const policies::IdleSettings& sampling, const IdleConfig& window);
// A fifth of sample_period, at least 100 ms: the short graces of tests, and cgroup-judged
// targets (their share is of one cgroup's use, so the machine's slack says nothing about it).
std::chrono::nanoseconds fastestSamplePeriod(const policies::IdleSettings& sampling);

}  // namespace reclaimd::controller

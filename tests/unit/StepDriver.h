// A whole step run at once over callbacks: the tests' way to drive StepRun (the engine gives
// each chunk as a command and hears its result in the next decide).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>

#include "controller/engine/ReclaimStep.h"

namespace reclaimd::testing {

// One request of `bytes`.
using ChunkWriter = std::function<cgroup::ReclaimWrite(std::uint64_t bytes)>;
// The target's reclaimable bytes now; nullopt when they cannot be read (the step ends).
using Measure = std::function<std::optional<std::uint64_t>()>;
// Called after each chunk with its request, its result and what it freed.
using ChunkReport = std::function<void(std::uint64_t asked, const cgroup::ReclaimWrite&, std::int64_t freed)>;

inline controller::StepOutcome runStep(const controller::StepLimits& limits, const Measure& measure,
                                       const ChunkWriter& write, const std::function<bool()>& shouldStop,
                                       const ChunkReport& report = {}) {
  controller::StepRun step(limits, measure());
  while (auto ask = step.next(shouldStop)) {
    const cgroup::ReclaimWrite w = write(*ask);
    const std::int64_t freed = step.written(w, measure());
    if (report) report(*ask, w, freed);
  }
  return step.outcome();
}

}  // namespace reclaimd::testing

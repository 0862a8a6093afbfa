#include "controller/engine/ReclaimStep.h"

#include <algorithm>

#include "policies/Step.h"

namespace reclaimd::controller {

const char* toString(StepEnd end) {
  switch (end) {
    case StepEnd::Asked: return "asked";
    case StepEnd::Floor: return "floor";
    case StepEnd::Kernel: return "kernel";
    case StepEnd::Stopped: return "stopped";
    case StepEnd::Budget: return "budget";
    case StepEnd::Unmeasured: return "unmeasured";
  }
  return "?";
}

StepOutcome runStep(const StepLimits& limits, const Measure& measure, const ChunkWriter& write,
                    const std::function<bool()>& shouldStop, const ChunkReport& report) {
  StepOutcome out;
  auto current = measure();
  if (!current) {
    out.end = StepEnd::Unmeasured;
    return out;
  }
  out.before = out.after = *current;
  // Freed per byte asked, as last seen: 1.0 on kernels that reclaim what they are asked.
  double overshoot = limits.overshoot;
  for (;;) {
    if (out.requestedBytes >= limits.stepBytes) {
      out.end = StepEnd::Asked;
      break;
    }
    if (shouldStop()) {
      out.end = StepEnd::Stopped;
      break;
    }
    if (out.chunks > 0 && out.took >= limits.budget) {
      out.end = StepEnd::Budget;
      break;
    }
    const std::uint64_t above = out.after > limits.floor ? out.after - limits.floor : 0;
    const auto aim = overshoot > 0 ? static_cast<std::uint64_t>(static_cast<double>(above) / overshoot) : above / 2;
    const std::uint64_t ask = std::min({limits.chunk, limits.stepBytes - out.requestedBytes, aim});
    if (ask < policies::kMinRequestBytes) {
      out.end = StepEnd::Floor;
      break;
    }
    const cgroup::ReclaimWrite w = write(ask);
    ++out.chunks;
    out.requestedBytes += ask;
    out.took += w.took;
    out.status = w.status;
    out.err = w.err;
    out.error = w.error;
    const std::uint64_t was = out.after;
    auto now = measure();
    if (now) out.after = *now;
    const std::int64_t freed = saturatingDifference(was, out.after);
    if (report) report(ask, w, freed);
    // Only a full chunk says how this kernel overshoots; EAGAIN means it ran out instead.
    if (w.status == cgroup::ReclaimStatus::Done && freed > 0) {
      overshoot = std::clamp(static_cast<double>(freed) / static_cast<double>(ask), 1.0, 2.0);
    }
    if (w.status != cgroup::ReclaimStatus::Done) {
      out.end = StepEnd::Kernel;
      break;
    }
    if (!now) {
      out.end = StepEnd::Unmeasured;
      break;
    }
  }
  out.overshoot = overshoot;
  return out;
}

}  // namespace reclaimd::controller

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

std::uint64_t aimAbove(std::uint64_t above, double overshoot) {
  return overshoot > 0 ? static_cast<std::uint64_t>(static_cast<double>(above) / overshoot) : above / 2;
}

StepRun::StepRun(const StepLimits& limits, std::optional<std::uint64_t> measured)
    : limits_(limits), overshoot_(limits.overshoot) {
  if (!measured) {
    end(StepEnd::Unmeasured);
    return;
  }
  out_.before = out_.after = *measured;
}

StepOutcome StepRun::end(StepEnd why) {
  out_.end = why;
  out_.overshoot = overshoot_;
  over_ = true;
  return out_;
}

std::optional<std::uint64_t> StepRun::next(const std::function<bool()>& shouldStop) {
  if (over_) return std::nullopt;
  if (out_.requestedBytes >= limits_.stepBytes) {
    end(StepEnd::Asked);
    return std::nullopt;
  }
  if (shouldStop()) {
    end(StepEnd::Stopped);
    return std::nullopt;
  }
  if (out_.chunks > 0 && out_.took >= limits_.budget) {
    end(StepEnd::Budget);
    return std::nullopt;
  }
  // Freed per byte asked, as last seen: 1.0 on kernels that reclaim what they are asked.
  const std::uint64_t above = out_.after > limits_.floor ? out_.after - limits_.floor : 0;
  const std::uint64_t ask =
      std::min({limits_.chunk, limits_.stepBytes - out_.requestedBytes, aimAbove(above, overshoot_)});
  if (ask < policies::kMinRequestBytes) {
    end(StepEnd::Floor);
    return std::nullopt;
  }
  asking_ = ask;
  return ask;
}

std::int64_t StepRun::written(const cgroup::ReclaimWrite& w, std::optional<std::uint64_t> measured) {
  ++out_.chunks;
  out_.requestedBytes += asking_;
  out_.took += w.took;
  out_.result = w.result;
  const std::uint64_t was = out_.after;
  if (measured) out_.after = *measured;
  const std::int64_t freed = saturatingDifference(was, out_.after);
  // Only a full chunk says how this kernel overshoots; EAGAIN means it ran out instead.
  if (w.result && freed > 0)
    overshoot_ = std::clamp(static_cast<double>(freed) / static_cast<double>(asking_), 1.0, 2.0);
  if (!w.result)
    end(StepEnd::Kernel);
  else if (!measured)
    end(StepEnd::Unmeasured);
  return freed;
}

}  // namespace reclaimd::controller

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

std::uint64_t aimAbove(std::uint64_t above, double overshoot, std::uint64_t excess) {
  if (overshoot <= 0) return above / 2;
  const std::uint64_t room = above > excess ? above - excess : 0;
  return static_cast<std::uint64_t>(static_cast<double>(room) / overshoot);
}

StepRun::StepRun(const StepLimits& limits, std::optional<std::uint64_t> measured)
    : limits_(limits), overshoot_(limits.overshoot), excess_(std::min(limits.excess, kMaxExcessBytes)) {
  if (!measured) {
    end(StepEnd::Unmeasured);
    return;
  }
  out_.before = out_.after = *measured;
}

StepOutcome StepRun::end(StepEnd why) {
  out_.end = why;
  out_.overshoot = overshoot_;
  out_.excess = excess_;
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
  const std::uint64_t above = out_.after > limits_.floor ? out_.after - limits_.floor : 0;
  std::uint64_t ask =
      std::min({limits_.chunk, limits_.stepBytes - out_.requestedBytes, aimAbove(above, overshoot_, excess_)});
  if (limits_.room != kNoRoomLimit) {
    const auto freed = static_cast<std::uint64_t>(std::max<std::int64_t>(out_.freed(), 0));
    ask = std::min(ask, aimAbove(limits_.room > freed ? limits_.room - freed : 0, overshoot_, excess_));
  }
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
  if (w.result && freed > 0) learn(freed);
  if (!w.result)
    end(StepEnd::Kernel);
  else if (!measured)
    end(StepEnd::Unmeasured);
  return freed;
}

// What the ratio known before this chunk does not explain, up to a folio, is the kernel's
// excess (whole folios freed past the request). The ratio is still learned from the whole of
// what was freed: a small chunk that freed a folio more aims the next one short, never long.
void StepRun::learn(std::int64_t freed) {
  const double asked = static_cast<double>(asking_);
  const double got = static_cast<double>(freed);
  if (overshoot_ > 0 && got > asked * overshoot_) {
    const auto beyond = static_cast<std::uint64_t>(got - asked * overshoot_);
    excess_ = std::max(excess_, std::min(beyond, kMaxExcessBytes));
  }
  overshoot_ = std::clamp(got / asked, 1.0, 2.0);
}

}  // namespace reclaimd::controller

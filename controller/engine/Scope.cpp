#include "controller/engine/Scope.h"

namespace reclaimd::controller {

const char* toString(PressureFeed feed) {
  switch (feed) {
    case PressureFeed::Pending: return "pending";
    case PressureFeed::Trigger: return "trigger";
    case PressureFeed::Polling: return "polling";
    case PressureFeed::Off: return "off";
  }
  return "?";
}

BackoffConfig backoffConfigOf(const policies::PressureSettings& s) {
  // Halving stops at 1/64 of a step; min_step then bounds the bytes.
  return BackoffConfig{s.calm, 1.0 / 64};
}

Scope::Scope(std::string label, const policies::PressureSettings& settings)
    : label_(std::move(label)),
      spec_{std::chrono::microseconds(settings.stall), std::chrono::microseconds(settings.window)},
      // A second beyond the window, so the window's start always has a reading at or before it.
      span_(settings.window + std::chrono::seconds(1)),
      meter_(span_),
      backoff_(backoffConfigOf(settings)) {}

bool Scope::add(TimePoint now, std::uint64_t totalUsec, std::uint64_t ownUsec) {
  // Under a trigger, totals are read only around steps and events, and a gap without an event is
  // a gap without a crossing: a reading after one says nothing about the last window, and spread
  // over it, the stall of a workload long gone would count as pressure now. Start afresh.
  // (Polled scopes keep the average: it is all their sparse readings can tell.)
  if (feed_ == PressureFeed::Trigger && lastAt_ && now - *lastAt_ > span_) meter_ = psi::Meter(span_);
  lastAt_ = now;
  // Our own stall can overlap others' (then "some" counted it once): subtracting it can hide a
  // little of theirs, never invent any.
  meter_.add(now, totalUsec > ownUsec ? totalUsec - ownUsec : 0);
  lastStall_ = meter_.stallOver(spec_.window);
  return lastStall_ >= spec_.stall;
}

}  // namespace reclaimd::controller

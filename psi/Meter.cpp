#include "psi/Meter.h"

namespace reclaimd::psi {

void Meter::add(TimePoint at, std::uint64_t totalUsec) {
  if (!readings_.empty() && (totalUsec < readings_.back().total || at < readings_.back().at)) readings_.clear();
  readings_.push_back(Reading{at, totalUsec});
  // Keep one reading at or before the span's start as its anchor.
  while (readings_.size() >= 2 && readings_[1].at <= at - span_)
    readings_.pop_front();
}

std::chrono::microseconds Meter::stallOver(std::chrono::nanoseconds window) const {
  if (readings_.size() < 2) return std::chrono::microseconds(0);
  const Reading& newest = readings_.back();
  const Reading* anchor = &readings_.front();
  for (const Reading& r : readings_) {
    if (r.at > newest.at - window) break;
    anchor = &r;
  }
  const std::uint64_t grown = newest.total - anchor->total;
  const auto span = newest.at - anchor->at;
  if (span <= window) return std::chrono::microseconds(grown);
  return std::chrono::microseconds(static_cast<std::uint64_t>(
      static_cast<double>(grown) * static_cast<double>(window.count()) / static_cast<double>(span.count())));
}

}  // namespace reclaimd::psi

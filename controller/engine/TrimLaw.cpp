#include "controller/engine/TrimLaw.h"

#include <algorithm>

namespace reclaimd::controller {

namespace {

std::uint64_t cap(std::uint64_t above, const TrimLawSettings& s) {
  return std::max(s.minStep, std::min(s.maxStep, above / 4));
}

// `percent` of `bytes`, saturating: a double at or over 2^64 has no integer to convert to.
std::uint64_t percentOf(std::uint64_t bytes, double percent) {
  const double share = static_cast<double>(bytes) * std::clamp(percent, 0.0, 100.0) / 100.0;
  return share >= 18446744073709551615.0 ? bytes : static_cast<std::uint64_t>(share);
}

}  // namespace

void TrimLaw::start(TimePoint now, std::uint64_t above, const TrimLawSettings& s) {
  const std::uint64_t share = percentOf(above, s.percent);
  step_ = std::min(std::max(share, s.minStep), cap(above, s));
  cleanSince_ = now;
}

std::uint64_t TrimLaw::size(std::uint64_t above, const TrimLawSettings& s) const {
  return std::min({step_, cap(above, s), above});
}

void TrimLaw::probed(TimePoint now, std::uint64_t above, const TrimLawSettings& s) {
  if (now - cleanSince_ < s.stretch) return;
  holds_ = 0;
  // Saturating: a step near 2^63 stays where it is rather than wrapping.
  const std::uint64_t doubled = step_ > UINT64_MAX / 2 ? step_ : 2 * step_;
  step_ = std::max(step_, std::min(doubled, cap(above, s)));
}

std::optional<std::chrono::nanoseconds> TrimLaw::refaulted(TimePoint now, std::uint64_t reclaimable,
                                                           const TrimLawSettings& s) {
  const bool recurring = lastRefault_ && now - *lastRefault_ < s.stretch;
  step_ = s.minStep;
  cleanSince_ = now;
  lastRefault_ = now;
  if (!recurring) return std::nullopt;
  ++holds_;
  auto hold = std::chrono::duration_cast<std::chrono::nanoseconds>(s.stretch);
  for (unsigned i = 1; i < holds_ && hold < kMaxHold; ++i) hold *= 2;
  hold = std::min<std::chrono::nanoseconds>(hold, kMaxHold);
  heldUntil_ = now + hold;
  heldLevel_ = reclaimable;
  // A refault soon after the hold ends means the same bottom: the next hold follows at once.
  lastRefault_ = heldUntil_;
  return hold;
}

}  // namespace reclaimd::controller

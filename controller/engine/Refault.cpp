#include "controller/engine/Refault.h"

namespace reclaimd::controller {

namespace {

double seconds(std::chrono::nanoseconds d) {
  return std::chrono::duration<double>(d).count();
}

}  // namespace

void RefaultGuard::observe(TimePoint at, std::uint64_t refaults) {
  if (lastAt_ && at > *lastAt_ && refaults >= last_) {
    rate_ = static_cast<double>(refaults - last_) / seconds(at - *lastAt_);
  }
  lastAt_ = at;
  last_ = refaults;
}

void RefaultGuard::stepEnded(TimePoint at, std::uint64_t refaults) {
  watch_ = Watch{at, at, refaults, rate_};
  lastAt_ = at;
  last_ = refaults;
}

std::optional<RefaultJump> RefaultGuard::check(TimePoint at, std::uint64_t refaults) {
  if (!watch_) {
    observe(at, refaults);
    return std::nullopt;
  }
  if (refaults < watch_->base) {  // counter reset: a new cgroup under the old name
    watch_.reset();
    observe(at, refaults);
    return std::nullopt;
  }
  // A reading more than a window after the watch's previous one cannot say when its refaults
  // came: for all it knows the work started again long after the step. No verdict then (the
  // engine reads a watched target every turn, so this is a missed turn, not the rule).
  if (at - watch_->lastAt > config_.window) {
    watch_.reset();
    lastAt_ = at;
    last_ = refaults;
    return std::nullopt;
  }
  watch_->lastAt = at;
  const double elapsed = seconds(at - watch_->since);
  const double expected = watch_->rateBefore * elapsed;
  const double seen = static_cast<double>(refaults - watch_->base);
  if (seen - expected > static_cast<double>(config_.limitPages)) {
    RefaultJump jump{static_cast<std::uint64_t>(seen - expected), watch_->rateBefore,
                     elapsed > 0 ? seen / elapsed : seen};
    watch_.reset();
    lastAt_ = at;
    last_ = refaults;
    return jump;
  }
  if (at - watch_->since >= config_.window) {
    watch_.reset();
    lastAt_ = at;
    last_ = refaults;
  }
  return std::nullopt;
}

}  // namespace reclaimd::controller

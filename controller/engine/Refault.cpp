#include "controller/engine/Refault.h"

#include <algorithm>

#include "base/Checked.h"

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

void RefaultGuard::stepEnded(TimePoint at, std::uint64_t refaults, std::chrono::nanoseconds window) {
  afterStep_ = AfterStep{at, refaults, rate_, std::max(window, config_.window)};
  lastAt_ = at;
  last_ = refaults;
}

std::optional<RefaultJump> RefaultGuard::check(TimePoint at, std::uint64_t refaults) {
  if (!afterStep_) {
    observe(at, refaults);
    return std::nullopt;
  }
  if (refaults < last_) {  // counter reset: a new cgroup under the old name
    afterStep_.reset();
    observe(at, refaults);
    return std::nullopt;
  }
  // A reading past the window's end counts only the window's share of what came since the
  // previous reading, at an even rate: refaults spread over two minutes after a step are not
  // all the step's doing, and a tick as long as the window still sees its
  // own step's refaults.
  const TimePoint end = afterStep_->since + afterStep_->window;
  double counted = static_cast<double>(refaults);
  TimePoint upTo = at;
  if (at > end && at > *lastAt_) {
    const double share = seconds(end - *lastAt_) / seconds(at - *lastAt_);
    counted = static_cast<double>(last_) + static_cast<double>(refaults - last_) * share;
    upTo = end;
  }
  lastAt_ = at;  // during a watch, the previous reading (observe() resumes from it after)
  last_ = refaults;
  const double elapsed = seconds(upTo - afterStep_->since);
  const double expected = afterStep_->rateBefore * elapsed;
  const double seen = counted - static_cast<double>(afterStep_->base);
  std::optional<RefaultJump> jump;
  if (seen - expected > static_cast<double>(config_.limitPages))
    jump = RefaultJump{saturatingCount(seen - expected), afterStep_->rateBefore, elapsed > 0 ? seen / elapsed : seen};
  if (jump || at >= end) afterStep_.reset();  // one alarm per step; a window without one ends quietly
  return jump;
}

bool RefaultGuard::lapse(TimePoint at) {
  if (!afterStep_ || at < afterStep_->since + afterStep_->window) return false;
  afterStep_.reset();
  return true;
}

}  // namespace reclaimd::controller

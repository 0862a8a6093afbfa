#include "controller/engine/Backoff.h"

#include <algorithm>

namespace reclaimd::controller {

bool Backoff::pressure(TimePoint at) {
  lastPressure_ = std::max(lastPressure_, at);
  if (active_) return false;
  active_ = true;
  ++consecutive_;
  scale_ = std::max(scale_ / 2, config_.minScale);
  return true;
}

bool Backoff::resume(TimePoint now) {
  if (!active_ || now - lastPressure_ < config_.calm) return false;
  active_ = false;
  return true;
}

void Backoff::stepSucceeded() {
  consecutive_ = 0;
  scale_ = std::min(scale_ * 2, 1.0);
}

}  // namespace reclaimd::controller

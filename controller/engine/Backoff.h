// Backing off under memory pressure. Pure: fed with pressure reports and the time.
//
// When a scope (the machine, or one target) crosses its pressure threshold, reclaim there
// stops at once (between chunks, too). It resumes only after the pressure stayed under the
// threshold for the calm period, with its step halved for each backoff since the last
// successful step (down to a minimum), and the step doubles back after each successful step.
#pragma once

#include <chrono>
#include <cstdint>

#include "base/Clock.h"

namespace reclaimd::controller {

struct BackoffConfig {
  std::chrono::nanoseconds calm = std::chrono::seconds(30);
  double minScale = 1.0 / 16;  // the smallest step is 1/16 of the policy's step
};

class Backoff {
 public:
  explicit Backoff(BackoffConfig config = {}) : config_(config) {}

  // Pressure was over the threshold at `at`. Returns true when this begins a backoff (the
  // caller logs it); repeated reports while backed off only push the calm period back.
  bool pressure(TimePoint at);

  // Returns true when, at `now`, the calm period has passed and reclaim resumes.
  bool resume(TimePoint now);

  // A step finished with pressure under the threshold: the step scale doubles back.
  void stepSucceeded();

  bool active() const { return active_; }
  // Multiplier for this scope's step: 1, 1/2, 1/4 ... down to minScale.
  double scale() const { return scale_; }
  int consecutive() const { return consecutive_; }
  TimePoint lastPressure() const { return lastPressure_; }
  // When reclaim may resume if no more pressure comes.
  TimePoint resumeAt() const { return lastPressure_ + config_.calm; }
  void reconfigure(BackoffConfig config) { config_ = config; }
  const BackoffConfig& config() const { return config_; }

 private:
  BackoffConfig config_;
  bool active_ = false;
  int consecutive_ = 0;
  double scale_ = 1.0;
  TimePoint lastPressure_{};
};

}  // namespace reclaimd::controller

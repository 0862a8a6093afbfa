// Refault protection. Pure: fed with a target's workingset_refault_file counter and the time.
//
// A page read back soon after it was reclaimed is a refault. After each step the guard
// watches the target's refaults for `window`; if they exceed what the rate before the step
// would give by more than `limitPages`, the step cut into the working set, and the target's
// floor goes up to its current cache for the rest of the idle period.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>

#include "base/Clock.h"

namespace reclaimd::controller {

struct RefaultConfig {
  std::chrono::nanoseconds window = std::chrono::seconds(10);
  std::uint64_t limitPages = 256;  // 1 MiB of 4 KiB pages read back beyond the usual rate
};

struct RefaultJump {
  std::uint64_t excessPages = 0;  // refaults beyond the pre-step rate
  double rateBefore = 0;          // pages per second before the step
  double rateAfter = 0;           // pages per second since the step
};

class RefaultGuard {
 public:
  explicit RefaultGuard(RefaultConfig config = {}) : config_(config) {}

  // A counter reading outside any watch: keeps the pre-step rate current.
  void observe(TimePoint at, std::uint64_t refaults);
  // A reading the usual rate must not learn from (refaults a probe caused, still coming in):
  // the rate is counted again from it.
  void skip(TimePoint at, std::uint64_t refaults) {
    lastAt_ = at;
    last_ = refaults;
  }
  // A step ended at `at` with the counter at `refaults`: start watching, for the configured
  // window or `window` when longer.
  void stepEnded(TimePoint at, std::uint64_t refaults, std::chrono::nanoseconds window = {});
  // A reading while watching: the jump when the limit is passed (the watch then ends), else
  // nullopt. The watch also ends quietly when its window has passed; a reading past the
  // window's end is judged on the window's share of what came since the previous reading.
  std::optional<RefaultJump> check(TimePoint at, std::uint64_t refaults);

  // No reading could be taken (the counter unreadable): a watch whose window has passed ends
  // unjudged, as it would were the refaults flat. True when one ended.
  bool lapse(TimePoint at);

  bool watching() const { return afterStep_.has_value(); }
  void reconfigure(RefaultConfig config) { config_ = config; }

 private:
  // The step being watched: when it ended, the counter then, and the rate before it.
  struct AfterStep {
    TimePoint since;
    std::uint64_t base;
    double rateBefore;
    std::chrono::nanoseconds window;
  };
  RefaultConfig config_;
  std::optional<TimePoint> lastAt_;  // the newest reading, in a watch or not
  std::uint64_t last_ = 0;
  double rate_ = 0;  // pages per second between the last two readings outside a watch
  std::optional<AfterStep> afterStep_;
};

}  // namespace reclaimd::controller

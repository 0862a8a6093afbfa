// Stall time over a sliding window, from successive readings of a pressure file's `total`.
// Pure: the caller reads the file and passes the time of each reading.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>

#include "base/Clock.h"

namespace reclaimd::psi {

class Meter {
 public:
  // `span`: how much history to keep (the longest window asked of stallOver).
  explicit Meter(std::chrono::nanoseconds span) : span_(span) {}

  // Records a reading; a total that goes backwards (a cgroup recreated) restarts the history.
  void add(TimePoint at, std::uint64_t totalUsec);

  // Stall time in the last `window` before the newest reading: the growth of `total` since the
  // newest reading at or before (newest - window), or since the oldest reading when history is
  // shorter. When that reading is older than the window (readings were sparse), the growth is
  // scaled to the window: the average rate is all the readings can tell. 0 with fewer than two
  // readings.
  std::chrono::microseconds stallOver(std::chrono::nanoseconds window) const;

  bool empty() const { return readings_.empty(); }
  // True when the readings reach back a whole `window` from the newest: stallOver is then
  // measured, not a single reading's 0 or a guess.
  bool covers(std::chrono::nanoseconds window) const {
    return readings_.size() >= 2 && readings_.front().at <= readings_.back().at - window;
  }

 private:
  struct Reading {
    TimePoint at;
    std::uint64_t total;
  };
  std::chrono::nanoseconds span_;
  std::deque<Reading> readings_;
};

}  // namespace reclaimd::psi

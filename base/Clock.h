// The clock is injected: decision code receives `now` and never reads a clock itself,
// so tests can drive minutes of behaviour in microseconds.
#pragma once

#include <chrono>

namespace reclaimd {

using SteadyClock = std::chrono::steady_clock;
using TimePoint = SteadyClock::time_point;
using Duration = SteadyClock::duration;

class Clock {
 public:
  virtual ~Clock() = default;
  virtual TimePoint now() const = 0;
};

class RealClock final : public Clock {
 public:
  TimePoint now() const override { return SteadyClock::now(); }
};

// CPU time consumed by this whole process (all threads, user and kernel), in nanoseconds.
// Precise (scheduler accounting), and a syscall rather than a file read, so it is cheap
// enough to take on every sample.
std::chrono::nanoseconds processCpuTime();

}  // namespace reclaimd

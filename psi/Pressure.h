// Pressure stall information: /proc/pressure/{memory,cpu,io} and a cgroup's *.pressure.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "base/Result.h"

namespace reclaimd::psi {

struct PressureLine {
  double avg10 = 0, avg60 = 0, avg300 = 0;  // percent of wall time stalled
  std::uint64_t totalUsec = 0;              // cumulative stall time, microseconds, < 2^63
};

struct Pressure {
  PressureLine some;
  std::optional<PressureLine> full;  // absent in /proc/pressure/cpu before 5.13
};

// Parses
//   some avg10=0.00 avg60=0.00 avg300=0.00 total=0
//   full avg10=0.00 avg60=0.00 avg300=0.00 total=0
// The "some" line is required. Errors: Errc::Parse naming the malformed line or field;
// EOVERFLOW for a total past 2^63-1 us (what std::chrono::microseconds holds).
Result<Pressure> parsePressure(std::string_view content);

}  // namespace reclaimd::psi

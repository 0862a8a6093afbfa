// The aggregate `cpu` line of /proc/stat.
#pragma once

#include <chrono>
#include <cstdint>
#include <string_view>

#include "base/Result.h"

namespace reclaimd::proc {

// Cumulative CPU time of all CPUs, in USER_HZ ticks (10 ms on every Linux architecture
// that matters here; read sysconf(_SC_CLK_TCK) rather than assuming).
struct CpuTimes {
  std::uint64_t user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0;
  // The online CPUs: the file's `cpuN` lines (0 when it holds only the aggregate line).
  unsigned cpus = 0;

  // Work done: guest and guest_nice are already inside user and nice, so they are not added.
  std::uint64_t busy() const { return user + nice + system + irq + softirq + steal; }
  // Time not working: idle plus waiting for I/O (the CPU was free to run anything).
  std::uint64_t idleAll() const { return idle + iowait; }
  std::uint64_t total() const { return busy() + idleAll(); }
};

// Parses the first line of /proc/stat:
//   cpu  10132153 290696 3084719 46828483 16683 0 25195 0 175628 0
// The line must start with "cpu " and end with a newline (a truncated read is an error, not a
// smaller number), and hold at least user, nice, system and idle; later fields, absent on
// very old kernels, count as 0. The `cpuN` lines that follow are counted, not parsed. Errors: Errc::Parse with what was
// wrong; EOVERFLOW when the ticks add up to more than 2^64 (so busy(), idleAll() and total() never wrap on its result).
Result<CpuTimes> parseProcStat(std::string_view content);

// CPU time as std::chrono durations: what the idle detector compares.
struct CpuTime {
  std::chrono::nanoseconds busy{0};
  std::chrono::nanoseconds total{0};
  unsigned cpus = 0;  // CpuTimes::cpus
};

// `times`' busy() and total() in nanoseconds, `tick` being one USER_HZ tick
// (1 s / sysconf(_SC_CLK_TCK)): the controller never multiplies raw ticks itself. Errors:
// EOVERFLOW when a sum passes 2^64 ticks or the time passes 2^63-1 ns (292 years of CPU time,
// e.g. user=10^12 ticks of 10 ms).
Result<CpuTime> cpuTime(const CpuTimes& times, std::chrono::nanoseconds tick);

}  // namespace reclaimd::proc

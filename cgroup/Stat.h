// memory.stat and cpu.stat of a cgroup: flat "key value" files.
#pragma once

#include <chrono>
#include <cstdint>
#include <string_view>

#include "base/Result.h"

namespace reclaimd::cgroup {

// Bytes, except the workingset counters (pages, cumulative).
struct MemoryStat {
  std::uint64_t anon = 0;
  std::uint64_t file = 0;  // includes shmem/tmpfs, which file reclaim cannot drop
  std::uint64_t activeFile = 0;
  std::uint64_t inactiveFile = 0;
  std::uint64_t shmem = 0;
  std::uint64_t slabReclaimable = 0;
  std::uint64_t workingsetRefaultFile = 0;   // 5.9+; 0 when absent
  std::uint64_t workingsetActivateFile = 0;  // of those, activated; 5.9+; 0 when absent

  // Page cache on the file LRUs: what file reclaim can take from this cgroup.
  std::uint64_t fileCache() const { return activeFile + inactiveFile; }
};

// Parses memory.stat ("active_file 104857600" lines). active_file and inactive_file are
// required; the rest default to 0. Errors: Errc::Parse naming the malformed line; EOVERFLOW
// when active_file + inactive_file passes 2^64 (so fileCache() never wraps on its result).
Result<MemoryStat> parseMemoryStat(std::string_view content);

struct CpuStat {
  std::uint64_t usageUsec = 0;  // CPU time of the cgroup's tasks, microseconds, cumulative

  // usageUsec as nanoseconds, checked: the controller never converts the raw count itself.
  // Errors: EOVERFLOW past 2^63-1 ns (292 years; e.g. usage_usec=10^16).
  Result<std::chrono::nanoseconds> usage() const;
};

// Parses cpu.stat ("usage_usec 8734201"). usage_usec is required (present with or without
// the cpu controller enabled). Errors: Errc::Parse.
Result<CpuStat> parseCpuStat(std::string_view content);

}  // namespace reclaimd::cgroup

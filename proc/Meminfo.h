// /proc/meminfo: the whole machine's memory figures.
#pragma once

#include <cstdint>
#include <string_view>

#include "base/Result.h"

namespace reclaimd::proc {

// Values in bytes.
struct Meminfo {
  std::uint64_t memTotal = 0;
  std::uint64_t memFree = 0;
  std::uint64_t activeFile = 0;
  std::uint64_t inactiveFile = 0;
  std::uint64_t sReclaimable = 0;
  std::uint64_t shmem = 0;
  std::uint64_t swapTotal = 0;
  std::uint64_t swapFree = 0;

  // Page cache on the file LRUs: what file reclaim can take. Shmem/tmpfs live on the anon
  // LRUs and are not in here.
  std::uint64_t fileCache() const { return activeFile + inactiveFile; }
  // What reclaim can give back without touching anonymous memory: the file LRUs plus
  // reclaimable slab (dentries, inodes), the seed's measure.
  std::uint64_t reclaimable() const { return fileCache() + sReclaimable; }
  std::uint64_t used() const { return memTotal - memFree; }
};

// Parses /proc/meminfo ("MemTotal:       16303412 kB" lines). MemTotal, MemFree,
// Active(file), Inactive(file) and SReclaimable are required; Shmem, SwapTotal and SwapFree
// default to 0. Unknown lines are ignored (the file grows with every kernel). Errors: Errc::Parse
// naming the missing or malformed field (a size whose bytes do not fit in 64 bits is malformed);
// EOVERFLOW when the sum behind reclaimable() does not fit (so fileCache(), reclaimable() and
// used() never wrap on a parsed Meminfo).
Result<Meminfo> parseMeminfo(std::string_view content);

}  // namespace reclaimd::proc

// Where the kernel's files are. Injected (command-line flags), so every test can point
// reclaimd at a temporary tree; no literal "/proc" appears anywhere else.
#pragma once

#include <string>
#include <string_view>

namespace reclaimd::controller {

struct Paths {
  std::string procRoot = "/proc";
  // The cgroup2 root; empty means: find the cgroup2 mount in <procRoot>/self/mountinfo.
  std::string cgroupRoot;
  // sysfs, for the kernel's access information (MGLRU, DAMON) that `reclaimd probe` reports.
  std::string sysRoot = "/sys";

  std::string proc(std::string_view relative) const { return procRoot + "/" + std::string(relative); }
};

// Files under the proc root, relative to it.
inline constexpr std::string_view kProcStat = "stat";
inline constexpr std::string_view kProcMeminfo = "meminfo";
inline constexpr std::string_view kProcVmstat = "vmstat";
inline constexpr std::string_view kProcMountinfo = "self/mountinfo";
inline constexpr std::string_view kProcPressureMemory = "pressure/memory";
inline constexpr std::string_view kDropCaches = "sys/vm/drop_caches";
inline constexpr std::string_view kCompactMemory = "sys/vm/compact_memory";

}  // namespace reclaimd::controller

// Names of the cgroup v2 control files reclaimd reads or writes: one place, no literals
// scattered through the code.
#pragma once

namespace reclaimd::cgroup {

inline constexpr const char* kControllers = "cgroup.controllers";
inline constexpr const char* kSubtreeControl = "cgroup.subtree_control";
inline constexpr const char* kMemoryReclaim = "memory.reclaim";
inline constexpr const char* kMemoryStat = "memory.stat";
inline constexpr const char* kMemoryCurrent = "memory.current";
inline constexpr const char* kMemoryPressure = "memory.pressure";
inline constexpr const char* kCpuStat = "cpu.stat";

}  // namespace reclaimd::cgroup

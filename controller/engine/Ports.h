// What can be read, behind one interface, and the plain types of the readings. The engine never
// makes a syscall: the shell's adapters (controller/shell/) implement this over /proc and the
// cgroup tree, and the engine's tests over a simulated machine; the shell takes what an Output
// asks for through it (takeReadings, controller/shell/Turn.h) and hands the engine the readings
// (Readings.h), so a quiet tick reads /proc/stat and nothing else.
#pragma once

#include <chrono>
#include <cstdint>
#include <string_view>

#include "base/Result.h"
#include "cgroup/TreeNodes.h"
#include "controller/engine/BusyCgroups.h"
#include "proc/Meminfo.h"

namespace reclaimd::controller {

// A pressure scope: 0 is the machine's, any other value is the id of the target it watches.
using ScopeId = std::uint32_t;
inline constexpr ScopeId kMachineScope = 0;

// A cgroup as the engine knows it: its path below the root ("" for the root) and the inode it
// had when walked. An adapter that finds another inode at the path answers ENOENT (gone).
struct CgroupRef {
  std::string_view path;
  std::uint64_t inode = 0;
};

// The machine's CPU time, summed over all CPUs, from /proc/stat: busy is
// user+nice+system+irq+softirq+steal, total adds idle+iowait.
struct CpuReading {
  std::chrono::nanoseconds busy{0};
  std::chrono::nanoseconds total{0};
  unsigned cpus = 0;  // online CPUs; 0 when unknown
};

// A cgroup's reclaimable file cache (memory.stat active_file + inactive_file: not "file",
// which holds tmpfs) and its workingset_refault_file counter (pages).
struct MemoryReading {
  std::uint64_t reclaimable = 0;
  std::uint64_t refaults = 0;
};

class Sensors {
 public:
  virtual ~Sensors() = default;
  virtual Result<CpuReading> cpu() = 0;
  // reclaimd's own CPU time (all threads), cumulative.
  virtual std::chrono::nanoseconds ownCpu() = 0;
  virtual Result<proc::Meminfo> meminfo() = 0;
  // /proc/vmstat's workingset_refault_file (workingset_refault before 5.9).
  virtual Result<std::uint64_t> machineRefaults() = 0;
  // A walk of the cgroup tree below the root, and below a cgroup only where `descend` says.
  // Only an unreadable root is an error.
  virtual Result<cgroup::Tree> tree(const cgroup::Descend& descend) = 0;
  // Errors: ENOENT/ENODEV (cgroup::cgroupGone) when the cgroup left; others as read.
  virtual Result<MemoryReading> memory(const CgroupRef& cgroup) = 0;
  // The cgroup's cpu.stat usage_usec, as a duration.
  virtual Result<std::chrono::nanoseconds> cgroupCpu(const CgroupRef& cgroup) = 0;
  // Every cgroup's cumulative cpu.stat usage in one walk (controller/shell/BusyScan.h), for the
  // cgroups that keep the machine busy. Only an unreadable root (or no tree in use) is an error.
  virtual Result<CgroupCpuScan> cgroupCpuScan() = 0;
  // The scope's pressure file's "some" total, microseconds.
  virtual Result<std::uint64_t> pressureTotal(ScopeId scope) = 0;
};

}  // namespace reclaimd::controller

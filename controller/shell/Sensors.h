// Where the shell takes the readings the engine asks for (Readings.h): over /proc and the cgroup
// tree in the daemon (Io.h), over a simulated machine in the engine's scenario tests. The engine
// never sees it; takeReadings (Turn.h) answers an Output's Reads through it.
#pragma once

#include <chrono>
#include <cstdint>

#include "base/Result.h"
#include "cgroup/TreeNodes.h"
#include "controller/engine/Readings.h"
#include "proc/Meminfo.h"

namespace reclaimd::controller {

class Sensors {
 public:
  virtual ~Sensors() = default;
  virtual Result<CpuReading> cpu() = 0;
  // reclaimd's own CPU time (all threads), cumulative.
  virtual std::chrono::nanoseconds ownCpu() = 0;
  virtual Result<proc::Meminfo> meminfo() = 0;
  // /proc/vmstat's workingset_refault_file (workingset_refault before 5.9).
  virtual Result<proc::Workingset> machineRefaults() = 0;
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

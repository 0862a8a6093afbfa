// What the engine asks the shell to read, and what the shell read, as plain data. An Output
// names the reads its next decide needs (Reads); the shell takes them after carrying out the
// Output's command, so a chunk's result comes with the cache measured after the write, and the
// next Input carries them (Readings). Only what is asked is read: a quiet tick reads /proc/stat
// alone.
#pragma once

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/Result.h"
#include "cgroup/TreeNodes.h"
#include "controller/engine/BusyCgroups.h"
#include "proc/Meminfo.h"
#include "proc/Vmstat.h"

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
// which holds tmpfs) and its workingset_refault_file and workingset_activate_file counters
// (pages).
struct MemoryReading {
  std::uint64_t reclaimable = 0;
  std::uint64_t refaults = 0;
  std::uint64_t activations = 0;
};

// A cgroup named by the path and inode the engine knows it by (CgroupRef, owned).
struct CgroupKey {
  std::string path;
  std::uint64_t inode = 0;
  CgroupRef ref() const { return CgroupRef{path, inode}; }
  bool operator==(const CgroupKey&) const = default;
};

struct Reads {
  bool cpu = false;  // the machine's CPU time (/proc/stat) and reclaimd's own
  bool meminfo = false;
  bool machineRefaults = false;  // /proc/vmstat's workingset counters
  bool scan = false;             // every cgroup's cpu.stat, then reclaimd's own CPU time
  bool tree = false;             // a walk of the cgroup tree, below a cgroup where `descend` says
  cgroup::Descend descend;
  std::vector<CgroupKey> memory;     // each cgroup's memory.stat
  std::vector<CgroupKey> cgroupCpu;  // each cgroup's cpu.stat usage, then reclaimd's own CPU time
  std::vector<ScopeId> pressure;     // each scope's pressure total

  bool empty() const {
    return !cpu && !meminfo && !machineRefaults && !scan && !tree && memory.empty() && cgroupCpu.empty() &&
           pressure.empty();
  }
};

struct MemoryRead {
  CgroupKey cgroup;
  Result<MemoryReading> reading;
};

// A busy scan, and reclaimd's own CPU time read after it (the scan's reads are its own work).
struct ScanRead {
  Result<CgroupCpuScan> cgroups;
  std::chrono::nanoseconds ownCpu{0};
};

struct CgroupCpuRead {
  CgroupKey cgroup;
  Result<std::chrono::nanoseconds> usage;
};

struct PressureRead {
  ScopeId scope = kMachineScope;
  Result<std::uint64_t> total;
};

// The answers to one Reads, each with its own error: a reading that failed is as telling as one
// that did not (a cgroup that left answers ENOENT).
struct Readings {
  std::optional<Result<CpuReading>> cpu;
  std::optional<std::chrono::nanoseconds> ownCpu;  // read with `cpu`
  std::optional<Result<proc::Meminfo>> meminfo;
  std::optional<Result<proc::Workingset>> machineRefaults;
  std::optional<ScanRead> scan;
  std::optional<Result<cgroup::Tree>> tree;
  std::vector<MemoryRead> memory;
  std::vector<CgroupCpuRead> cgroupCpu;
  std::vector<PressureRead> pressure;

  // The reading of `cgroup` (of scope `scope`); nullptr when it was not read.
  const Result<MemoryReading>* memoryOf(const CgroupRef& cgroup) const;
  const Result<std::uint64_t>* pressureOf(ScopeId scope) const;
  const Result<std::chrono::nanoseconds>* cgroupCpuOf(const CgroupRef& cgroup) const;
  // Every read `reads` names was taken.
  bool answer(const Reads& reads) const;
};

// What every tick reads before the engine sees it: the CPU times the idle detector judges by. A
// quiet tick reads nothing more.
inline Reads tickReads() {
  Reads r;
  r.cpu = true;
  return r;
}

// `reading`, or, where the shell did not take a read it was asked for, an error saying so: the
// engine treats it as unreadable.
template <class T>
Result<T> readingOr(const Result<T>* reading, const char* what) {
  if (reading) return *reading;
  return errnoError(ENODATA, std::string(what) + " was asked for and not read");
}
template <class T>
Result<T> readingOr(const std::optional<Result<T>>& reading, const char* what) {
  return readingOr(reading ? &*reading : nullptr, what);
}

}  // namespace reclaimd::controller

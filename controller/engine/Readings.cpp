#include "controller/engine/Readings.h"

#include <algorithm>

namespace reclaimd::controller {

const Result<MemoryReading>* Readings::memoryOf(const CgroupRef& cgroup) const {
  for (const MemoryRead& m : memory) {
    if (m.cgroup.path == cgroup.path && m.cgroup.inode == cgroup.inode) return &m.reading;
  }
  return nullptr;
}

const Result<std::chrono::nanoseconds>* Readings::cgroupCpuOf(const CgroupRef& cgroup) const {
  for (const CgroupCpuRead& c : cgroupCpu) {
    if (c.cgroup.path == cgroup.path && c.cgroup.inode == cgroup.inode) return &c.usage;
  }
  return nullptr;
}

const Result<std::uint64_t>* Readings::pressureOf(ScopeId scope) const {
  for (const PressureRead& p : pressure) {
    if (p.scope == scope) return &p.total;
  }
  return nullptr;
}

bool Readings::answer(const Reads& reads) const {
  if ((reads.cpu && (!cpu || !ownCpu)) || (reads.meminfo && !meminfo) || (reads.machineRefaults && !machineRefaults) ||
      (reads.scan && !scan) || (reads.tree && !tree))
    return false;
  const bool memories = std::all_of(reads.memory.begin(), reads.memory.end(),
                                    [&](const CgroupKey& c) { return memoryOf(c.ref()) != nullptr; });
  const bool usages = std::all_of(reads.cgroupCpu.begin(), reads.cgroupCpu.end(),
                                  [&](const CgroupKey& c) { return cgroupCpuOf(c.ref()) != nullptr; });
  return memories && usages &&
         std::all_of(reads.pressure.begin(), reads.pressure.end(), [&](ScopeId s) { return pressureOf(s) != nullptr; });
}

}  // namespace reclaimd::controller

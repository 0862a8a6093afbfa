// What this kernel and this mount layout let reclaimd do, as plain data: the probe
// (controller/Probe.h) finds it, the engine decides with it.
#pragma once

#include <cstdint>
#include <string>

namespace reclaimd::controller {

enum class KeySupport { Supported, Unsupported, Unknown };

struct Capabilities {
  std::string cgroupRoot;         // the cgroup2 root in use; empty when none was found
  std::string cgroupProblem;      // why there is none, or why it has no memory controller
  bool memoryController = false;  // "memory" listed in the root's cgroup.controllers
  bool reclaimWritable = false;   // the root's memory.reclaim took a zero-byte request
  std::string reclaimProblem;
  KeySupport swappinessKey = KeySupport::Unknown;  // "0 swappiness=0" accepted (6.11+)
  bool swapActive = false;                         // SwapTotal > 0
  std::string swapProblem;                         // why /proc/meminfo could not say
  bool psiAvailable = false;                       // <proc>/pressure/memory readable (needs psi=1 on Debian)
  std::string psiProblem;
  bool psiTriggers = false;       // the policy's trigger registers and can be waited on with epoll
  std::string psiTrigger;         // what was tried, and where: "some 300000 2000000 on /proc/pressure/memory"
  std::string psiTriggerProblem;  // else: why (pressure is then read every sample instead)
  bool compactMemory = false;     // <proc>/sys/vm/compact_memory writable (CONFIG_COMPACTION)
  std::string compactProblem;
  bool dropCaches = false;        // <proc>/sys/vm/drop_caches writable
  std::string dropCachesProblem;
  // Where libcgroup sees the memory controller mounted (a v1 path on hybrid hosts); empty when
  // not asked (a --proc-root other than /proc: libcgroup reads the real mount table) or unknown.
  std::string libcgroupMemory;
  // The kernel's page size: workingset_refault_* counts pages and reclaimd's figures are bytes.
  // 4 KiB until probed (x86-64; arm64 kernels may have 16 or 64 KiB pages).
  std::uint64_t pageBytes = 4096;
};

}  // namespace reclaimd::controller

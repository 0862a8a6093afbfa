// The capability probe: what this kernel and this mount layout let reclaimd do.
// Run at start, on SIGHUP, after an EINVAL from memory.reclaim, and by `reclaimd probe`.
#pragma once

#include <string>

#include "base/Result.h"
#include "controller/Paths.h"
#include "policies/Policy.h"
#include "psi/Trigger.h"

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
  bool psiAvailable = false;                       // <proc>/pressure/memory readable (needs psi=1 on Debian)
  std::string psiProblem;
  bool psiTriggers = false;       // the policy's trigger registers and can be waited on with epoll
  std::string psiTrigger;         // what was tried, and where: "some 300000 2000000 on /proc/pressure/memory"
  std::string psiTriggerProblem;  // else: why (pressure is then read every sample instead)
  bool compactMemory = false;     // <proc>/sys/vm/compact_memory writable (CONFIG_COMPACTION)
  bool dropCaches = false;        // <proc>/sys/vm/drop_caches writable
  std::string dropCachesProblem;
  // Where libcgroup sees the memory controller mounted (a v1 path on hybrid hosts); empty when
  // not asked (a --proc-root other than /proc: libcgroup reads the real mount table) or unknown.
  std::string libcgroupMemory;
};

// An explicitly given cgroup root: a directory holding cgroup.controllers (what every cgroup2
// directory has and a cgroup v1 hierarchy or a mistyped path has not; a fixture tree that has
// it passes). A mistake here is an error at start, never a silent fallback to drop_caches.
Result<void> checkCgroupRoot(const std::string& path);

// The machine's PSI trigger as the daemon registers it for `pressure`.
psi::TriggerSpec machineTrigger(const policies::PressureSettings& pressure);

// Probes. The only writes are zero-byte memory.reclaim requests, which reclaim nothing, and the
// PSI trigger the daemon would register (`trigger`: the policy's pressure.stall and window),
// removed again at once; drop_caches and compact_memory are opened for writing and closed
// unwritten. Like the daemon, the trigger goes on the root cgroup's memory.pressure where the
// machine's pressure file takes none (a read-only /proc in a container).
Capabilities probe(const Paths& paths, const psi::TriggerSpec& trigger = machineTrigger({}));

// The probe as "key: value" lines for `reclaimd probe`.
std::string describe(const Capabilities& caps);

}  // namespace reclaimd::controller

// The capability probe: what this kernel and this mount layout let reclaimd do.
// Run at start, on SIGHUP, after an EINVAL from memory.reclaim, and by `reclaimd probe`.
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <string>

#include "base/Result.h"
#include "controller/Paths.h"
#include "controller/engine/Capabilities.h"
#include "policies/Policy.h"
#include "psi/Trigger.h"

namespace reclaimd::controller {

// An explicitly given cgroup root: a directory holding cgroup.controllers (what every cgroup2
// directory has and a cgroup v1 hierarchy or a mistyped path has not; a fixture tree that has
// it passes). A mistake here is an error at start, never a silent fallback to drop_caches.
Result<void> checkCgroupRoot(const std::string& path);

// The cgroup2 root: paths.cgroupRoot when given, else the cgroup2 mount that mountinfo shows; "" when
// none is found, with `problem` saying why.
std::string findCgroupRoot(const Paths& paths, std::string& problem);

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

// The same as one JSON object for `reclaimd probe --json`: the keys of describe(), booleans as
// booleans, and each problem under "<key>_problem" where there is one.
nlohmann::json describeJson(const Capabilities& caps);

}  // namespace reclaimd::controller

// The cgroups' CPU for "why memory is held": one walk of the tree and one cpu.stat read per
// cgroup, taken through the shell's Sensors when the engine asks for it (not while idle), at
// most every kBusyScanEvery (controller/engine/BusyCgroups.h ranks the scans).
#pragma once

#include <cstddef>

#include "base/Result.h"
#include "controller/engine/BusyCgroups.h"

namespace reclaimd::controller {

// The most cgroups one scan reads. A desktop or a WSL distribution under systemd has 100-300
// cgroups, a Kubernetes node with 110 pods about a thousand; 4,096 took 45-100 ms (walk 27 ms)
// on a loaded 2-CPU VM, every 30 s at most and only while the machine is busy: ~0.3 % of a CPU.
// Past it the walk stops (cgroup::walkTree's maxNodes): the cgroups not walked are not read,
// their CPU stays in their nearest walked ancestor's usage and is named under it, and the scan
// is incomplete (so a cgroup it missed is not taken as new by the next one).
inline constexpr std::size_t kBusyScanMaxCgroups = 4096;

// How each cpu.stat is opened: Beneath, one openat2 from the root per cgroup (RESOLVE_BENEATH,
// no symlinks, no other mount), falling back to ByDirectory where openat2 is missing (before
// Linux 5.6) or filtered; ByDirectory, each directory opened below its parent's without
// following symlinks, then its cpu.stat (tests choose it to cover the fallback).
enum class ScanOpens { Beneath, ByDirectory };

// Walks the tree below the directory `rootFd` and reads every cgroup's cpu.stat usage_usec,
// parents before children (pre-order), each under the inode the walk saw. A cgroup removed
// meanwhile is skipped quietly; one that cannot be opened or read for another reason (EACCES,
// EMFILE, a malformed cpu.stat) is skipped and makes the scan incomplete, as a truncated or
// incomplete walk does. Errors: only an unreadable root (the walk's error).
Result<CgroupCpuScan> scanCgroupCpu(int rootFd, std::size_t maxCgroups = kBusyScanMaxCgroups,
                                    ScanOpens opens = ScanOpens::Beneath);

}  // namespace reclaimd::controller

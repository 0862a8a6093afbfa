// The reclaim targets and what reclaimd remembers about each.
//
// Without rules the whole tree is one target, the root (today's machine-wide behaviour: no
// walk at all). With rules, each walk resolves every cgroup's rule and decomposes the tree
// (Decompose.h); a target's state (idle detector, period flags, totals) is carried from one
// walk to the next while its path and inode stay the same. A new inode under an old name is
// a new cgroup: fresh state.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/Clock.h"
#include "cgroup/Cgroup.h"
#include "controller/Decide.h"
#include "controller/IdleDetector.h"
#include "controller/Pressure.h"
#include "controller/Refault.h"
#include "policies/Policy.h"
#include "proc/Meminfo.h"

namespace reclaimd::controller {

// With rules, the tree is walked again at least this often: new cgroups are found within it,
// and a walk made in the same tick always precedes a write, so a protected cgroup created under
// a target is never reclaimed through it.
inline constexpr std::chrono::seconds kWalkPeriod{5};

struct Target {
  std::string path;  // relative; "" is the root
  std::uint64_t inode = 0;
  policies::Governance gov;
  std::optional<cgroup::Cgroup> cgroup;  // open files; absent when it could not be opened
  // The cgroup's own CPU (usage_usec as a share of one CPU), when its idle source needs it.
  std::optional<IdleDetector> cpuIdle;
  IdleVerdict cpuVerdict;  // its last verdict
  TimePoint firstSeen{};
  bool idle = false;   // as last judged
  PeriodState period;  // cleared when the target leaves idle
  std::uint64_t reclaimedBytes = 0;
  std::uint64_t steps = 0;
  std::uint64_t partialSteps = 0;  // ended in EAGAIN
  double writeSeconds = 0;
  std::string lastAction;
  // Pressure in this target's own memory.pressure (not for the root: the machine's scope
  // covers it), and its refaults.
  std::optional<PressureScope> pressure;
  std::uint32_t pressureId = 0;
  RefaultGuard refaults;
  // This tick's measurement (reclaimable bytes, refault pages), when taken.
  std::optional<std::pair<std::uint64_t, std::uint64_t>> measured;

  std::uint64_t floor() const { return std::max(gov.floor, period.raisedFloor.value_or(0)); }
  bool isRoot() const { return path.empty(); }
  std::string label() const { return path.empty() ? "/" : path; }
  bool usesCgroupCpu() const { return gov.idleSource != policies::IdleSource::System; }
  bool usesSystemCpu() const { return gov.idleSource != policies::IdleSource::Cgroup; }
};

// Idle and gradual: a target a pass may write to.
bool activeTarget(const Target& target);

struct WalkStats {
  std::size_t cgroups = 0, targets = 0, vanished = 0, symlinks = 0;
};

class Targets {
 public:
  // `rootFd` is the cgroup2 root's directory, borrowed.
  // `ownCgroup` is reclaimd's own cgroup (relative), so its CPU time is not counted against a
  // target that contains it.
  Targets(int rootFd, std::string ownCgroup) : rootFd_(rootFd), ownCgroup_(std::move(ownCgroup)) {}

  // Rebuilds the list for `policy`: the root alone without rules, else a walk. Errors only
  // when the root cannot be read; vanished cgroups are skipped.
  Result<WalkStats> refresh(const policies::Policy& policy, TimePoint now);

  // Feeds each target that judges its own CPU a cpu.stat sample; a target whose files are
  // gone is dropped quietly. Returns how many were dropped.
  std::size_t sampleCpu(TimePoint now);

  // The target's reclaimable bytes now: the root is measured machine-wide from `mem` (file
  // LRUs plus reclaimable slab, as the seed does); below it, the file LRUs of the cgroup's
  // subtree from memory.stat (not "file", which holds tmpfs). nullopt when unreadable; a
  // cgroup found gone is closed and the next walk drops it.
  std::optional<std::uint64_t> reclaimable(Target& target, const proc::Meminfo& mem);
  // Reclaimable bytes and refaulted pages (workingset_refault_file) together; the root's refaults
  // are the machine's, passed in from /proc/vmstat.
  std::optional<std::pair<std::uint64_t, std::uint64_t>> measure(Target& target, const proc::Meminfo& mem,
                                                                 std::uint64_t machineRefaults);

  std::vector<Target>& all() { return targets_; }
  const std::vector<Target>& all() const { return targets_; }
  TimePoint lastWalk() const { return lastWalk_; }
  void invalidate() { lastWalk_ = TimePoint{}; }

 private:
  Target make(std::string path, std::uint64_t inode, policies::Governance gov, TimePoint now);

  int rootFd_;
  std::string ownCgroup_;
  std::vector<Target> targets_;
  TimePoint lastWalk_{};
};

IdleConfig idleConfigOf(const policies::IdleSettings& s);

// True when `path` is `ancestor` or below it (relative paths, "" the root).
bool within(std::string_view path, std::string_view ancestor);

}  // namespace reclaimd::controller

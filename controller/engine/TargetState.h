// What the engine remembers about one reclaim target.
//
// Without rules the whole tree is one target, the root (the seed's machine-wide behaviour: no
// walk at all). With rules, each walk resolves every cgroup's rule and decomposes the tree
// (Decompose.h); a target's state is carried from one walk to the next while its path, inode
// and rule stay the same. A new inode under an old name is a new cgroup: fresh state.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "base/Clock.h"
#include "controller/engine/CgroupPaths.h"
#include "controller/engine/Decide.h"
#include "controller/engine/IdleDetector.h"
#include "controller/engine/Readings.h"
#include "controller/engine/Refault.h"
#include "controller/engine/TrimLaw.h"
#include "controller/engine/Scope.h"
#include "policies/Policy.h"

namespace reclaimd::controller {

// Trimming a busy target (policies::TrimSettings): when it may start, when the next probe is
// due, and how low the refaults let it go.
struct TrimState {
  std::optional<TimePoint> busySince;  // its window (or warm-up so far) over the threshold since
  bool working = false;                // its current interval is over the threshold too
  // Its current interval is far over it (kHeavyWork): the work is using its cache; the busy
  // share, for status.
  std::optional<double> heavy;
  bool baselined = false;              // refaults read once before the first probe: a rate to judge by
  TimePoint next{};                    // the next probe
  TrimLaw law;                         // the probes' size, and holds after recurring refaults
  // Refaults jumped after a probe and are still coming in: the round is judged once they are.
  struct Settling {
    RefaultJump jump;
    TimePoint since;
    TimePoint at;             // the last reading
    std::uint64_t refaults;   // the counter then, pages
  };
  std::optional<Settling> settling;
  // A cgroup inside the target, quiet since the scan before, that its probes are written to
  // instead of the whole (EngineAim.cpp).
  struct Aim {
    std::string path;
    std::uint64_t inode = 0;
    std::uint64_t reclaimable = 0;  // as last measured
    std::uint64_t floor = 0;
    bool is(std::string_view p, std::uint64_t i) const { return path == p && inode == i; }
  };
  std::optional<Aim> aim;
  // The last cgroup aimed at whose probe freed next to nothing (its cache does not go: locked,
  // under writeback), as it was then: not aimed at again until it holds a chunk more.
  std::optional<Aim> refused;
  // The last cgroup an aim took to its floor, while it stays quiet: not aimed at again. What it
  // holds since came back from disk or is new: pages a reader of its own uses, one too light to
  // count as work (a reader in another cgroup takes what it reads back into its own: the kernel
  // charges a page to the cgroup that reads it in). Its grace takes it as a unit; aimed at again,
  // the probes took those pages to the floor at every scan (the engine's simulation: a 100 MiB
  // set read every 20 s read back twice more).
  std::optional<Aim> drained;
  std::uint64_t bytes = 0;   // freed by probes, in total
  std::uint64_t probes = 0;  // probes written
};

// A systemd unit or scope judged by its own CPU inside a target that the machine-wide settings
// govern (EngineUnits.cpp): the target it lies in, and its CPU when it was last judged quiet.
struct UnitState {
  std::uint32_t within = 0;  // the enclosing target's id
  std::chrono::nanoseconds usage{0};
  TimePoint at{};
  double percent = 0;  // of one CPU over the window, as judged
  bool busy = false;   // worked since: dropped at the end of the turn
};

struct TargetState {
  std::uint32_t id = 0;  // unique for the daemon's life; also the id of its pressure scope
  std::string path;      // relative; "" is the root
  std::uint64_t inode = 0;
  policies::Governance gov;
  // The cgroup's own CPU (usage_usec as a share of one CPU), when its idle source needs it.
  std::optional<IdleDetector> cpuIdle;
  IdleVerdict cpuVerdict;
  TimePoint firstSeen{};
  bool idle = false;      // as last judged: in an idle period and not blocked
  bool inPeriod = false;  // in an idle period (a Blocked tick keeps the period and its state)
  PeriodState period;     // cleared when the target's idle period ends
  // Pressure in its own memory.pressure (not for the root: the machine's scope covers it).
  std::optional<Scope> scope;
  RefaultGuard refaults;
  TrimState trim;
  std::optional<UnitState> unit;          // set: a unit target, reclaimed while quiet (idle.units)
  std::optional<MemoryReading> measured;  // this turn's reading, when taken
  bool gone = false;                      // its files were found gone: dropped at the next walk

  std::uint64_t reclaimedBytes = 0;
  std::uint64_t steps = 0;
  std::uint64_t partialSteps = 0;  // ended in EAGAIN
  double writeSeconds = 0;
  std::uint64_t wouldReclaimBytes = 0;  // dry run: what the steps would have asked
  std::uint64_t wouldSteps = 0;
  std::uint64_t lastReclaimable = 0;  // as last measured
  std::string lastAction;
  std::optional<TimePoint> lastActionAt;

  std::uint64_t floor() const { return std::max(gov.floor, period.raisedFloor.value_or(0)); }
  bool isRoot() const { return path.empty(); }
  std::string label() const { return path.empty() ? "/" : path; }
  bool usesCgroupCpu() const { return gov.idleSource != policies::IdleSource::System; }
  bool usesSystemCpu() const { return gov.idleSource != policies::IdleSource::Cgroup; }
  // Idle and gradual: a pass may write to it.
  bool active() const { return idle && gov.mode == policies::Mode::Gradual && !gone; }
  CgroupRef ref() const { return CgroupRef{path, inode}; }
  // Its refaults are being followed: a step's watch, or a probe's round still coming in.
  bool watched() const { return refaults.watching() || trim.settling.has_value(); }
};

IdleConfig idleConfigOf(const policies::IdleSettings& s);
// The refault guard's settings from a target's governance, its limit in the counter's pages.
RefaultConfig refaultConfigOf(const policies::Governance& gov, std::uint64_t pageBytes);

}  // namespace reclaimd::controller

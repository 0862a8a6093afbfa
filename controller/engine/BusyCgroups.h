// Which cgroups keep the machine busy: the part of "why memory is held" that names names.
//
// Fed scans of every cgroup's cumulative cpu.stat usage (the shell takes them: BusyScan.h), it
// answers the cgroups with the largest share of ALL CPUs between the oldest scan within the idle
// window and the newest: the same denominator as the machine's window busy share (the machine's
// total CPU time from /proc/stat, idle included), so "bg.slice 2.1%" reads against "window busy
// 2.6%, threshold 0.5%". Pure: no I/O, no clock.
//
// What is ranked is each cgroup's own CPU: its usage minus its children's (a parent's usage_usec
// includes its whole subtree). A slice with no processes of its own then ranks at ~0 and its
// busy service ranks by itself, so a parent neither hides its child (ranking only the top level
// would say "system.slice") nor duplicates it (ranking usage would say "system.slice 2.1%,
// system.slice/x.service 2.1%"). Ranking only leaves would miss the cgroups that have processes
// and children at once (the root, where WSL without systemd runs everything, and where kernel
// threads, interrupts and steal are counted). CPU of children removed during the window stays in
// the parent's counter, so it is named under the parent, the nearest cgroup that still exists.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/Clock.h"
#include "controller/engine/StatusData.h"

namespace reclaimd::controller {

// Scans are taken four times a window (and only while the machine is not idle), so a cgroup that
// went quiet is found within a quarter of a grace after it: every 30 s at the default 2 minutes,
// at most every kBusyScanEvery, at least every kBusyScanMin (a walk and a cpu.stat read per cgroup
// cost ~15 us a cgroup, a few ms for a desktop's 200).
inline constexpr std::chrono::seconds kBusyScanEvery{30};
inline constexpr std::chrono::seconds kBusyScanMin{1};
// How many cgroups status, the metrics and the held event name: the top three.
inline constexpr std::size_t kBusyTop = 3;

// One cgroup's cumulative cpu.stat usage_usec, as read.
struct CgroupCpu {
  std::string path;         // relative to the cgroup root, "" for the root
  std::uint64_t inode = 0;  // the cgroup's identity: a new inode under an old name is a new cgroup
  std::chrono::nanoseconds usage{0};
};

// A cgroup that was quiet for a whole window: its subtree's CPU between two scans at least the
// window apart, as a share of one CPU.
struct QuietCgroup {
  std::string path;
  std::uint64_t inode = 0;
  std::chrono::nanoseconds usage{0};  // its cumulative usage in the newest scan
  TimePoint at{};                     // when the newest scan was taken
  double percent = 0;                 // of one CPU, over the span
};

// One scan of the tree. `complete` is false when some cgroup was not read (the walk stopped at
// its cap or could not list a directory, or a cpu.stat could not be read): a cgroup missing from
// such a scan may have existed, so it is not taken as new when a later scan finds it.
struct CgroupCpuScan {
  std::vector<CgroupCpu> cgroups;  // parents before their children (the walk's pre-order)
  bool complete = true;
};

class BusyCgroups {
 public:
  // `window`: the span compared (the policy's idle.grace). `ownCgroup`: reclaimd's own cgroup
  // (relative); its own CPU is taken off that cgroup's share, as the idle detector takes it off
  // the machine's busy time.
  explicit BusyCgroups(std::chrono::nanoseconds window, std::string ownCgroup = {});

  // A new policy's grace. Scans already held are kept.
  void setWindow(std::chrono::nanoseconds window) { window_ = window; }

  // True when a scan should be taken at `now`: none was tried yet, or the last try (a scan
  // added, or failed()) is kBusyScanEvery old.
  bool due(TimePoint now) const;
  // How often scans are taken: a quarter of the window, within kBusyScanMin..kBusyScanEvery.
  std::chrono::nanoseconds scanEvery() const;

  // A scan could not be taken at `now` (the cgroup root unreadable, no tree in use): the next
  // try waits kBusyScanEvery like any other, rather than coming every tick.
  void failed(TimePoint now) { lastTry_ = now; }

  // Adds a scan taken at `at` (not before the newest held). `machineTotal` is the machine's
  // cumulative CPU time, all CPUs, busy and idle (CpuReading::total) read at the same turn;
  // `ownCpu` is reclaimd's own cumulative CPU time (ScanRead::ownCpu).
  void add(TimePoint at, std::chrono::nanoseconds machineTotal, std::chrono::nanoseconds ownCpu, CgroupCpuScan scan);

  // The `n` cgroups with the largest share of all CPUs (own CPU, children excluded) between the
  // oldest scan within the window and the newest, largest first (ties by path). Cgroups with no
  // CPU are left out. Empty when fewer than two scans lie within the window, or the newest is
  // older than the window at `now` (the machine was idle since: nothing is being measured).
  // As Status shows them: "/" for the root, busyPercent 0-100.
  std::vector<BusyCgroup> top(std::size_t n, TimePoint now) const;

  // The cgroups `pick` accepts whose whole subtree used at most `thresholdPercent` of one CPU
  // between the newest scan and the newest older one taken at least the window before it (the
  // same cgroup, by inode, in both), in the newest scan's order (parents first). Empty when no
  // scan lies a window back. A share of one CPU, not of all: a unit's own work is judged as a
  // cgroup rule's `idle_source: cgroup` is.
  // `over`: the span instead of the window (a scan period: a cgroup whose work just ended,
  // EngineAim.cpp), the cgroups quiet since the newest scan at least that long before the newest.
  std::vector<QuietCgroup> quiet(double thresholdPercent, const std::function<bool(std::string_view)>& pick,
                                 std::optional<std::chrono::nanoseconds> over = std::nullopt) const;
  // When the newest scan was taken (nothing before the first).
  std::optional<TimePoint> newestAt() const { return newest_ ? std::optional(newest_->at) : std::nullopt; }

  // Forgets every scan (the next two are needed before top() answers again).
  void clear();

  // How many scans are held (bounded by the thinning in add()).
  std::size_t held() const { return anchors_.size() + (newest_ ? 1 : 0); }

 private:
  struct Snapshot {
    TimePoint at{};
    std::chrono::nanoseconds machineTotal{0};
    std::chrono::nanoseconds ownCpu{0};
    CgroupCpuScan scan;
  };

  // The span compared: the window, but at least two scan periods so that a short grace still
  // has a previous scan to compare with.
  std::chrono::nanoseconds lookback() const;
  std::vector<BusyCgroup> rank(const Snapshot& from, const Snapshot& to, std::size_t n) const;

  std::chrono::nanoseconds window_;
  std::string ownCgroup_;
  // Older scans kept as baselines, oldest first, at least lookback/4 apart; the newest
  // scan is held apart from them until the next one arrives.
  std::deque<Snapshot> anchors_;
  std::optional<Snapshot> newest_;
  std::optional<TimePoint> lastTry_;
};

}  // namespace reclaimd::controller

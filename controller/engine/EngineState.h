// The engine's state as plain structs, one per part of the law, so a reader sees which part of
// a tick edits what: the machine's idleness (Engine.cpp), the targets (EngineTargets.cpp,
// EngineUnits.cpp), pressure and refaults (EnginePressure.cpp), the turn in progress
// (EngineDecide.cpp), the totals since start, and what the log has already said (the memory
// that keeps a repeated line from being said again). Per-target state, trimming's included, is
// TargetState.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "base/Clock.h"
#include "controller/engine/BusyCgroups.h"
#include "controller/engine/Commands.h"
#include "controller/engine/Decide.h"
#include "controller/engine/IdleDetector.h"
#include "controller/engine/Readings.h"
#include "controller/engine/ReclaimStep.h"
#include "controller/engine/Scope.h"
#include "controller/engine/TargetState.h"
#include "psi/Meter.h"

namespace reclaimd::controller {

// A pass's writes stop after this much time even if budget remains; the next tick goes on.
// Keeps each loop turn short however slow the kernel is.
inline constexpr std::chrono::seconds kPassBudget{1};

struct PlannedShare {
  std::uint32_t target = 0;
  std::uint64_t bytes = 0;  // at most this much asked in this step
  std::uint64_t known = 0;  // the target's reclaimable bytes, measured this turn
  bool trim = false;        // a probe of a busy target, not an idle target's step
  std::uint64_t floor = 0;  // where this step stops (a probe's floor may be held higher)
  // Where a probe is written when not to the target itself: the quiet cgroup it aims at.
  std::optional<CgroupKey> aim;
};

struct Plan {
  std::vector<PlannedShare> shares;  // gradual: in order
  bool dropCache = false;            // dropcache: sync, drop, then compact when compactAfterDrop
  bool compactAfterDrop = false;
  TimePoint wake{};  // the next turn, unless an event comes first
};

// A unit becomes a target when it holds this much above its floor (and as much more than it
// held when it was last left at rest): a finished build holds hundreds of MiB, and an idle
// service's few MiB are not worth a step. Probes aim at a quiet cgroup holding as much.
inline constexpr std::uint64_t kUnitExcess = 32ULL << 20;

// A quiet cgroup a scan found inside a target the machine's settings govern (EngineUnits.cpp).
struct UnitPick {
  QuietCgroup quiet;
  std::uint32_t within = 0;  // the enclosing target's id
};

// How far a turn's planning has gone: each phase takes what the one before asked to read.
enum class TurnPhase {
  Verdict,       // the verdict's readings: the scan, the machine's total, the tree, meminfo
  HeldLine,      // meminfo for the line that says why memory is held (then the mode's part)
  Cgroups,       // the units' memory.stat and the cgroups' CPU (then whether each target is idle)
  TargetTotals,  // the targets' pressure totals (then whether the pass has work)
  Cache,         // the machine's and the targets' cache (then the plan, or the walk again)
  Rewalk,        // the tree again before a write (then the cache of the targets it finds)
  Remeasure,     // their cache (then the plan)
  Planned,
};

// A turn in progress: what its planning asked to read, its plan, and how far the commands that
// carry it out have gone.
struct Tick {
  TimePoint at{};                 // the timer's time: the whole turn is judged at it
  std::optional<CpuReading> cpu;  // the tick's CPU times (none: the sample was skipped)
  TurnPhase phase = TurnPhase::Verdict;
  Reads asked;                       // by the phase before this one
  bool trims = false;                // a probe is due this turn
  std::optional<proc::Meminfo> mem;  // the machine's, as the pass measured it
  std::vector<UnitPick> unitPicks;   // quiet cgroups to take as targets, with the Cgroups readings
  std::vector<UnitPick> aimPicks;    // cgroups quiet since the scan before, for probes to aim at
  bool rescanned = false;            // a new busy scan came this turn: units and aims judged
  Plan plan;
  bool gradual = false;        // the mode when the turn began (a re-probe may change it)
  bool dropMeasuring = false;  // dropcache: meminfo asked for before the drop
  bool dropAsked = false;      // the drop, then the compaction after it
  bool compactAsked = false;
  std::optional<std::uint64_t> dropBefore;      // the machine's reclaimable bytes before the drop
  std::size_t share = 0;                        // gradual: the share being written, or the next one
  std::optional<StepRun> step;                  // ... its step
  bool pressed = false;                         // the step stopped for pressure
  std::chrono::nanoseconds left = kPassBudget;  // the pass's write time left
  std::uint64_t freed = 0;                      // by the pass so far
};

// The turn in progress and what it learned of the kernel's writing (EngineDecide.cpp).
struct Turning {
  std::optional<Tick> tick;
  std::optional<Command> pending;  // the command given last, until its result comes
  double overshoot = 0;            // freed per byte asked, learned from the kernel (ReclaimStep.h)
  std::uint64_t excess = 0;        // ... and freed beyond that by one request
  std::uint64_t uncompacted = 0;   // freed since the last compaction
};

struct RuleDetector {
  IdleConfig config;
  IdleDetector detector;
  IdleVerdict verdict;
};

// The machine's idleness (Engine.cpp).
struct MachineIdle {
  MachineIdle(const IdleConfig& config, std::chrono::nanoseconds grace, std::string ownCgroup)
      : detector(config), busy(grace, std::move(ownCgroup)) {}

  IdleDetector detector;  // the machine, under the policy's idle settings
  BusyCgroups busy;       // which cgroups keep the machine busy (scans while it is not idle)
  IdleVerdict verdict;
  std::vector<RuleDetector> rules;  // one per distinct idle setting the rules ask for
  PeriodState period;               // the machine's idle period (dropcache, compaction on entry)
  // Since when the window has been quiet but the current interval not (a burst holds idle back),
  // and how long that lasted before the idle period that followed.
  std::optional<TimePoint> blockedSince;
  std::chrono::nanoseconds blockedFor{0};
};

// Units left at rest (at their floor, or stalled): the reclaimable bytes they held then, so a
// unit is taken again only when its cache grew. Kept while the unit stays quiet.
struct UnitRest {
  std::uint64_t inode = 0;
  std::uint64_t bytes = 0;
};

// The targets and what finds them (EngineTargets.cpp, EngineUnits.cpp).
struct TargetSet {
  std::vector<TargetState> all;
  std::unordered_map<std::string, UnitRest> unitRest;
  std::optional<TimePoint> unitsJudgedAt;  // the scan units were last judged from
  std::uint32_t nextId = 1;                // 0 is the machine's scope
  std::optional<TimePoint> lastWalk;
  std::optional<TimePoint> restUntil;  // at the floors: the next measurement (kRecheckAtFloor)
};

// A scope as last told to the shell; `stale` after a reload, which makes every scope anew.
struct Watching {
  std::string path;
  std::uint64_t inode = 0;
  psi::TriggerSpec trigger;
  bool stale = false;
};

struct ScopeView {
  ScopeId id;
  std::string cgroupPath;
  std::uint64_t inode;
  psi::TriggerSpec trigger;
};

// Pressure scopes, the shell's watches, reclaimd's own stall and the machine's refaults
// (EnginePressure.cpp).
struct PressureState {
  std::optional<Scope> machine;
  // The targets' scopes before a reload, by path, until their scopes are made again.
  std::unordered_map<std::string, Scope> held;
  std::map<ScopeId, Watching> watched;
  // Watch changes worked out together and handed out one a decide: working each out afresh
  // compared every watched scope with every wanted one, for each of thousands of targets.
  std::deque<Command> watchChanges;
  std::optional<proc::Workingset> machineRefaults;  // /proc/vmstat, this turn
  // Time spent inside memory.reclaim writes, cumulative: our own memory stall, subtracted from
  // the machine's pressure (PSI charges it to reclaimd's cgroup, so the root sees it).
  std::chrono::microseconds ownStall{0};
  // The same, over time: how much of a window's stall reclaimd's own writes account for. Its
  // span covers the longest window the kernel takes (10 s).
  psi::Meter ownMeter{std::chrono::seconds(11)};
};

// Totals since start (targets that went away included), for status and the metrics.
struct Counters {
  std::uint64_t reclaimed = 0, steps = 0, partial = 0, wouldReclaim = 0, wouldSteps = 0;
  std::uint64_t trimmed = 0, trimProbes = 0, trimHolds = 0;
  std::uint64_t unitsTaken = 0, unitReclaimed = 0;
  double writeSeconds = 0;
  std::uint64_t dropcaches = 0, compactions = 0, floorRaises = 0, idlePeriods = 0;
  std::uint64_t sampleErrors = 0;
  std::string lastAction;
  std::optional<TimePoint> lastActionAt;
};

// Per trimmed target (by id): its probe count and freed bytes at the last summary, and when.
struct TrimSummary {
  TimePoint at{};
  std::uint64_t probes = 0;
  std::uint64_t bytes = 0;
};

// What the log has said already, so a line is said again only when its answer changes or its
// period has passed. Nothing here changes a decision.
struct Said {
  bool dropPaused = false;
  std::optional<IdleState> held;  // the state the last "held" event gave
  std::string heldNames;          // and the busy cgroups it named, one a line
  TimePoint heldAt{};
  bool cgroupPolling = false;
  // The cgroups said to lack the memory controller (cleared past kMaxUnaccounted: a tree whose
  // containers come and go must not grow it without end).
  static constexpr std::size_t kMaxUnaccounted = 4096;
  std::unordered_set<std::string> unaccounted;
  std::optional<TimePoint> sampleErrorAt;
  bool refaultWaitEnded = false;  // since /proc/vmstat was last read
  std::unordered_map<std::uint32_t, TrimSummary> trimSummaries;
};

}  // namespace reclaimd::controller

// The engine: every decision reclaimd makes, as one pure core.
//
// The shell calls decide() (Commands.h) when the timer fires, when a PSI trigger fires, and after
// each command it carried out; the engine answers with the next command (a chunk of a step to
// write, caches to drop, memory to compact, a pressure scope to watch or forget, the kernel to
// probe again) and the reads its next decision needs (Readings.h; a quiet tick reads /proc/stat
// and nothing else); it reads nothing itself. Its state
// is a few plain structs (EngineState.h), one per part of the law: the machine's idleness, the
// targets, pressure, the turn in progress, the counters, and what the log has already said. It
// makes no syscall, reads no clock and logs nothing itself: what it has to say comes back as
// Events the shell logs.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "base/Clock.h"
#include "base/Event.h"
#include "controller/engine/Capabilities.h"
#include "controller/engine/Commands.h"
#include "controller/engine/Decide.h"
#include "controller/engine/EngineState.h"
#include "controller/engine/IdleDetector.h"
#include "controller/engine/ModeChoice.h"
#include "controller/engine/Readings.h"
#include "controller/engine/ReclaimStep.h"
#include "controller/engine/Scope.h"
#include "controller/engine/StatusData.h"
#include "controller/engine/TargetState.h"
#include "policies/Policy.h"

namespace reclaimd::controller {

// With rules, the tree is walked again at least this often: new cgroups are found within it,
// and a walk made in the same turn always precedes a write, so a protected cgroup created under
// a target is never reclaimed through it.
inline constexpr std::chrono::seconds kWalkPeriod{5};
// At the floors, with no refault watch and no backoff, the cache is measured again only this
// often: a quiet tick reads /proc/stat alone. Cache regrowing at the floor is trimmed within it.
inline constexpr std::chrono::seconds kRecheckAtFloor{5};
// Why memory is held is said at most this often (and only when the answer changes).
inline constexpr std::chrono::seconds kHeldEvery{60};

struct EngineSetup {
  bool dryRun = false;    // decide and log; the plan holds no writes
  std::string ownCgroup;  // reclaimd's cgroup (relative), so its CPU is not held against a target
  // Build the per-tick trace event: only when the log shows trace (formatting it every second
  // was a third of a quiet wakeup's cost in user space).
  bool traceTicks = true;
};

// Trim probes are logged at debug; at info each trimmed target gets one summary line this often
// (a line per probe, one every trim.interval, 6 s by default, would be 600 an hour per busy target).
inline constexpr std::chrono::minutes kTrimSummaryEvery{10};
// While the machine is busy, free memory is compacted once this much has been freed since.
inline constexpr std::uint64_t kCompactAfterBusy = 64ULL << 20;

class Engine {
 public:
  Engine(policies::Policy policy, EngineSetup setup);

  // A new policy (reload): detectors, targets and histories are kept where settings stay.
  void setPolicy(policies::Policy policy);
  const policies::Policy& policy() const { return policy_; }
  const EngineSetup& setup() const { return setup_; }
  // The probe's findings (start, reload); `why` names the occasion in the mode event.
  void setCapabilities(const Capabilities& caps, std::string_view why);
  const EffectiveMode& mode() const { return mode_; }

  // The one entry point while running (Commands.h): takes what happened, answers what to do.
  // `in` is not read: every reading comes in `input` (the parameter goes with its callers).
  Output decide(const Input& input);

  // The engine's part of `reclaimd status` and the metrics at `now`; `unixNow` is the wall
  // clock's Unix time at that instant, and `when` renders an engine time as the wall-clock
  // text shown beside a last action.
  void fill(Status& status, TimePoint now, double unixNow, const std::function<std::string(TimePoint)>& when) const;
  // The reclaimable figures of a filled status from `readings` of statusReads(), taken when
  // status is asked for (the machine's above its floor, each target's above its own): the engine
  // measures targets only while it may write to them, and a busy or warming-up machine's status
  // would otherwise show what was there at the last step. A reading that failed leaves the
  // engine's last figure.
  Reads statusReads() const;
  void fillReclaimable(Status& status, const Readings& readings) const;
  // The label logs, status and metrics give a target's rule: its match text, "machine", "unit".
  std::string ruleLabel(const TargetState& t) const;
  const IdleVerdict& verdict() const { return idle_.verdict; }
  const std::vector<TargetState>& targets() const { return targets_.all; }
  const Capabilities& capabilities() const { return caps_; }
  const std::string& lastAction() const { return counters_.lastAction; }
  std::optional<TimePoint> lastActionAt() const { return counters_.lastActionAt; }
  // What happened since the last call, oldest first.
  Events takeEvents() { return std::exchange(events_, {}); }

 private:
  // EngineDecide.cpp: the commands of a tick, and what their results change.
  // Each gives what `out` asks of the shell (a command, reads); true when it gave something.
  void absorb(const Input& input);
  bool tickCommand(const Input& input, Output& out);
  bool nextChunk(const Input& input, Output& out);
  bool endStep(const Input& input, Output& out);
  void chunkResult(const cgroup::ReclaimWrite& write, const Input& input);
  // What a chunk of `t` asks to read after its write: the cache it sizes the next chunk from
  // (and the refaults a step's end starts its watch from), and the pressure totals of the check
  // before the next chunk.
  Reads chunkReads(const TargetState& t) const;
  // Before a step: the pressure totals its check reads, and after a step of this pass that
  // freed memory, its target's cache again (remeasures); the step starts from what was read.
  bool remeasures(const PlannedShare& share) const;
  Reads stepReads(const PlannedShare& share) const;
  std::optional<std::uint64_t> stepStart(const PlannedShare& share, const Input& input);
  // A target's cache: the read that measures it (meminfo for the root, memory.stat for a
  // cgroup), and its figure from the readings (an unreadable one is said, and answers nothing).
  void addCacheRead(const TargetState& t, Reads& r) const;
  std::optional<std::uint64_t> cacheOf(TargetState& t, const Input& input);
  std::optional<Command> watchCommand();
  std::deque<Command> watchChanges() const;
  std::vector<ScopeView> scopes() const;

  // EngineTurn.cpp: the turn's planning. Engine.cpp: idle detection, dropcache, waking.
  // The turn's first phase: the tick's CPU times judge idleness, and the verdict says what else
  // to read before the turn is planned (a busy scan when one is due, the machine's pressure
  // total where it is read on samples).
  Reads beginTurn(const Input& input);
  // The turn's planning, one phase a call (TurnPhase): takes what the phase before asked to
  // read, and answers what the next needs read; the plan is done at TurnPhase::Planned.
  Reads planTurn(const Input& input);
  // The turn goes on to phase `next`, which takes `reads`.
  Reads ask(TurnPhase next, Reads reads);
  // The verdict's readings taken in: the busy scan, the machine's pressure total, the walk.
  void takeVerdictReads(const Input& input);
  // The mode's part of the turn (dropcache's drop, gradual's targets and pass).
  Reads planMode();
  // The plan is done: when to wake, and what trimming says.
  Reads finishPlan();
  // After an EINVAL from memory.reclaim: the probe again. When it still believes in the format
  // the kernel just refused, reclaimd stops sending it: dropcache without rules, nothing with.
  void reprobed(const Capabilities& caps);
  // dropcache's outcome: `before`/`after` are the machine's reclaimable bytes (none: unreadable).
  void dropped(const Result<void>& result, std::optional<std::uint64_t> before, std::optional<std::uint64_t> after,
               std::chrono::nanoseconds took, TimePoint now);
  void compacted(const Result<void>& result, std::chrono::nanoseconds took, TimePoint now);
  // gradual: compact after a pass that freed memory, and once on entering the idle period so
  // free memory the work left behind forms blocks the host can take. A dry run says so and
  // answers false.
  bool wantsCompaction(std::uint64_t freed);
  // The target a share names (nullptr when it went away meanwhile).
  const TargetState* target(std::uint32_t id) const;
  StepLimits limitsFor(const PlannedShare& share, std::chrono::nanoseconds budget) const;
  // The pressure totals the check before a chunk of `target` reads: the machine's and the
  // target's, where their files are read.
  Reads pressureReads(std::uint32_t target) const;
  // Before a step and between chunks: takes the totals in `readings`; true when the machine or
  // the target backs off.
  bool pressureStops(std::uint32_t target, TimePoint now, const Readings& readings);
  // A chunk was written (its time is reclaimd's own memory stall).
  void chunkWritten(std::uint32_t target, std::uint64_t asked, const cgroup::ReclaimWrite& write, std::int64_t freed,
                    TimePoint now);
  // A step is over; true when the kernel refused its format (EINVAL): probe again.
  bool stepEnded(const PlannedShare& share, const StepOutcome& step, bool pressed, TimePoint now,
                 const Readings& readings);
  // How the shell watches scope `id` (after opening its file).
  void setFeed(ScopeId id, PressureFeed feed, std::string why, bool gone = false);
  // A PSI trigger fired (or its cgroup was removed).
  void pressureEvent(const ScopeEvent& event, TimePoint now);
  void observeCpu(const CpuSample& sample);
  void sayIdleEntered(TimePoint now, const Result<proc::Meminfo>& mem);
  void applyRuleDetectors();
  const IdleVerdict& systemVerdict(const policies::IdleSettings& idle) const;
  void dropCacheTurn(Plan& plan);
  void wouldDrop(const Result<proc::Meminfo>& mem, TimePoint now);
  // Whether the line that says why memory is held is due now; then it is said with `mem`.
  bool heldLineDue(TimePoint now);
  void sayWhyHeld(TimePoint now, const Result<proc::Meminfo>& mem);
  TimePoint nextWake(TimePoint now) const;
  void sampleError(const Error& error, TimePoint now);
  void note(TargetState* t, std::string what, TimePoint now);
  Event& emit(Severity severity, std::string_view name);

  // EngineTargets.cpp: the walk, cgroup CPU, judging, measuring.
  // With rules, the tree is walked every kWalkPeriod, and at once after a target left.
  bool walkDue(TimePoint now) const;
  // Where a walk reads below a cgroup: where a rule may match.
  cgroup::Descend descend() const;
  Reads treeReads() const;  // a walk's: the tree, below the cgroups the rules may match in
  // The targets from the tree `readTree` answers (called only with rules: without, the root is
  // the one target). False when the tree could not be read (the old targets stay, and no pass
  // writes).
  bool walk(TimePoint now, const std::function<Result<cgroup::Tree>()>& readTree);
  void adopt(std::vector<TargetState>& next, const std::unordered_map<std::string, std::size_t>& old, std::string path,
             std::uint64_t inode, policies::Governance gov, TimePoint now);
  TargetState newTarget(std::string path, std::uint64_t inode, const policies::Governance& gov, TimePoint now);
  void sampleCgroupCpu(TimePoint now, const Readings& readings);
  void judgeTargets(TimePoint now);
  // Each measured target's cache from the readings' memory.stat, the root's from `mem` and the
  // readings' machine refaults (none: not read, when no root is measured).
  void measureTargets(TimePoint now, const proc::Meminfo& mem, const Readings& readings);
  bool rootMeasured(TimePoint now) const;
  void targetGone(TargetState& t);
  void readFailed(TargetState& t, const Error& error);
  void unaccounted(TargetState& t, const Error& error);
  TargetState* find(std::uint32_t id);

  // EngineGradual.cpp: the pass, in the turn's phases. The walk, units, their CPU and whether
  // each target is idle; answers the targets' pressure totals to read.
  Reads gradualTargets(const Input& input);
  // Before it: the units judged from a new scan; answers their memory.stat and the CPU of every
  // cgroup judged by its own (units, cgroup-idle targets, and the units about to be taken).
  Reads gradualCgroups();
  // With those totals: whether the pass has work; answers the cache to measure (none: done).
  Reads gradualWork(const Input& input);
  // With the cache measured: the plan; with rules, one about to write first asks for the tree
  // again (the decomposition must be this turn's), then rewalked() walks it and asks for the
  // cache of the targets it finds, and remeasured() plans again from them.
  Reads gradualPass(const Input& input);
  std::optional<Reads> rewalked(const Input& input);  // none: the walk failed, nothing is written
  void remeasured(const Input& input);
  Reads cacheReads(TimePoint now) const;  // each measured target's memory.stat, the root's refaults
  void settlePass(std::vector<PlannedShare> shares);
  // Measured this turn: a target that may be written to or is watched for refaults.
  bool measures(const TargetState& t, TimePoint now) const;
  std::vector<PlannedShare> planPass(const proc::Meminfo& mem, TimePoint now) const;
  // Whether `reclaimable` is so close to `floor` that the first chunk would ask nothing (ReclaimStep.h:
  // aimAbove): what the kernel frees past a request would take the target under its floor.
  bool atFloor(std::uint64_t reclaimable, std::uint64_t floor) const;
  void dryRunShares(const std::vector<PlannedShare>& shares, TimePoint now);
  void settleStep(TargetState& t, const StepOutcome& step, bool pressed, TimePoint now);
  void fallBack();

  // EngineUnits.cpp: systemd units judged by their own CPU inside machine-governed targets.
  std::vector<UnitPick> quietUnits() const;
  std::vector<UnitPick> quietInBusyTargets(
      std::optional<std::chrono::nanoseconds> over,
      const std::function<bool(const TargetState&, std::string_view)>& accept) const;
  // After a new scan: drops the unit targets no longer quiet; answers the quiet cgroups to take
  // as targets when their cache is worth it (adoptUnit, with their memory.stat).
  std::vector<UnitPick> judgeUnits();
  bool adoptUnit(const UnitPick& u, TimePoint now, const Result<MemoryReading>& memory);
  // What governs a unit target: the machine-wide settings for a cgroup below the root, judged by
  // its own CPU, not trimmed (the target around it trims).
  policies::Governance unitGovernance() const;
  void checkUnitCpu(TargetState& t, TimePoint now, const Result<std::chrono::nanoseconds>& usage);
  void pruneUnits();
  void carryUnits(std::vector<TargetState>& next);

  // EngineAim.cpp: probes written to a quiet cgroup inside a busy target.
  std::vector<UnitPick> aimCandidates() const;
  void chooseAims(TimePoint now, const Readings& readings);
  void measureAim(TargetState& t, TimePoint now, const Readings& readings);
  void unaim(TargetState& t, TimePoint now, const std::string& why, bool drained);
  bool unitAt(std::string_view path) const;  // a unit target has that path
  void aimedStepEnded(TargetState& t, const StepOutcome& step, TimePoint now);
  bool refusedAim(std::uint32_t id, const QuietCgroup& q, std::uint64_t reclaimable) const;

  // EngineTrim.cpp: probing busy targets' cold cache.
  void judgeTrim(TargetState& t, TimePoint now);
  bool trimDue(const TargetState& t, TimePoint now) const;
  void planTrims(const proc::Meminfo& mem, TimePoint now, std::uint64_t used, std::vector<PlannedShare>& out) const;
  void scheduleTrims(TimePoint now);
  void holdTrim(TargetState& t, const RefaultJump& jump, TimePoint now);
  void settleTrim(TargetState& t, TimePoint now);
  std::uint64_t trimKeep(const TargetState& t, TimePoint now) const;
  std::uint64_t trimAbove(std::uint64_t reclaimable, std::uint64_t keep) const;
  TrimLawSettings trimLaw(const TargetState& t) const;
  void fillTrim(TargetStatus& ts, const TargetState& t, TimePoint now, double unixNow,
                const std::function<std::string(TimePoint)>& when) const;
  std::string trimmingWhy(const TargetState& t, std::uint64_t keep, std::uint64_t above,
                          const std::function<std::string(TimePoint)>& when, std::chrono::seconds since,
                          bool recent) const;

  // EngineStatus.cpp: one target's part of the status.
  TargetStatus targetStatus(const TargetState& t, TimePoint now, double unixNow,
                            const std::function<std::string(TimePoint)>& when) const;

  // EngineTrim.cpp: what trimming says at info.
  void summarizeTrims(TimePoint now);

  // EnginePressure.cpp: scopes, totals, backoff, refaults.
  void ensureScope(TargetState& t);
  Scope* scopeById(ScopeId id);
  // Takes a total of the scope's pressure file, read at `now`.
  void takeTotal(Scope& scope, ScopeId id, TimePoint now, const Result<std::uint64_t>& total);
  // A backoff ends once its calm period has passed (said as `resume`).
  void resumeIfCalm(Scope& scope, TimePoint now);
  // A backed-off scope whose pressure file could not be opened (feed Off: no total will ever be
  // read) resumes by the clock, as one whose totals are unreadable does.
  void resumeUnwatched(Scope& scope, TimePoint now);
  void reportPressure(Scope& scope, TimePoint now, const char* source);
  void checkRefaults(TargetState& t, TimePoint now);
  // The root's waits for the machine's refaults, ended by the clock while /proc/vmstat is unreadable.
  void lapseRefaultWaits(TargetState& t, TimePoint now);
  void watchRefaults(TargetState& t, bool trim, TimePoint now, const Readings& readings);

  policies::Policy policy_;
  EngineSetup setup_;
  Capabilities caps_;
  EffectiveMode mode_;
  bool compact_ = false;  // the policy asks for compaction and the kernel has compact_memory

  MachineIdle idle_;
  TargetSet targets_;
  PressureState pressure_;
  Turning turn_;
  Counters counters_;
  Said said_;  // log lines already said: silences repeats, decides nothing
  Events events_;
};

}  // namespace reclaimd::controller

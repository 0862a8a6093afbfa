// The gradual mode's pass: share the step budget among the idle targets, and settle each step
// once its chunks are written.
#include <algorithm>

#include "base/Quantities.h"
#include "controller/engine/Budget.h"
#include "controller/engine/Engine.h"
#include "policies/Step.h"

namespace reclaimd::controller {

using namespace std::chrono;

Reads Engine::gradualCgroups() {
  Tick& k = *turn_.tick;
  k.unitPicks.clear();
  k.aimPicks.clear();
  k.rescanned = idle_.busy.newestAt() && idle_.busy.newestAt() != targets_.unitsJudgedAt;
  if (k.rescanned) {
    k.unitPicks = judgeUnits();
    k.aimPicks = aimCandidates();
  }
  Reads r;
  for (const UnitPick& u : k.unitPicks) {
    const CgroupKey key{u.quiet.path, u.quiet.inode};
    r.memory.push_back(key);
    r.cgroupCpu.push_back(key);  // a unit taken now is checked this turn too
  }
  for (const UnitPick& u : k.aimPicks) {
    const CgroupKey key{u.quiet.path, u.quiet.inode};
    if (std::find(r.memory.begin(), r.memory.end(), key) == r.memory.end()) r.memory.push_back(key);
  }
  for (const TargetState& t : targets_.all) {
    if (!t.gone && (t.unit || t.cpuIdle)) r.cgroupCpu.push_back(CgroupKey{t.path, t.inode});
  }
  return r;
}

Reads Engine::gradualTargets(const Input& input) {
  Tick& k = *turn_.tick;
  const TimePoint now = k.at;
  for (const UnitPick& u : k.unitPicks) {
    const CgroupRef ref{u.quiet.path, u.quiet.inode};
    adoptUnit(u, now, readingOr(input.readings.memoryOf(ref), "memory.stat"));
  }
  if (k.rescanned) chooseAims(now, input.readings);
  sampleCgroupCpu(now, input.readings);
  judgeTargets(now);
  Reads totals;
  for (TargetState& t : targets_.all) {
    if (t.active() || trimDue(t, now)) ensureScope(t);
    if (t.scope) resumeUnwatched(*t.scope, now);
    if (!t.scope || !t.scope->readsTotals()) continue;
    if ((t.active() && t.scope->feed() == PressureFeed::Polling) || t.scope->backoff().active())
      totals.pressure.push_back(t.id);
  }
  return totals;
}

Reads Engine::gradualWork(const Input& input) {
  Tick& k = *turn_.tick;
  const TimePoint now = k.at;
  for (const ScopeId id : k.asked.pressure) {
    TargetState* t = find(id);  // gone meanwhile: its total says nothing
    if (t && t->scope) takeTotal(*t->scope, id, now, readingOr(input.readings.pressureOf(id), "a pressure total"));
  }
  k.trims =
      std::any_of(targets_.all.begin(), targets_.all.end(), [&](const TargetState& t) { return trimDue(t, now); });
  // A hold's refaults are read while it lasts: they raise the bottom it marks (TrimLaw::observe).
  const bool work = k.trims || std::any_of(targets_.all.begin(), targets_.all.end(), [&](const TargetState& t) {
                      return t.active() || t.watched() || t.trim.law.held(now);
                    });
  if (!work) return {};
  // At the floors with nothing to watch, the cache is looked at again only every
  // kRecheckAtFloor: a quiet tick reads /proc/stat alone.
  if (!k.trims && targets_.restUntil && now < *targets_.restUntil &&
      std::none_of(targets_.all.begin(), targets_.all.end(), [&](const TargetState& t) {
        return t.watched() || t.trim.law.held(now) || (t.scope && t.scope->backoff().active());
      }))
    return {};
  targets_.restUntil.reset();
  Reads cache = cacheReads(now);
  cache.meminfo = true;
  return cache;
}

Reads Engine::cacheReads(TimePoint now) const {
  Reads cache;
  cache.machineRefaults = rootMeasured(now);
  for (const TargetState& t : targets_.all) {
    if (!measures(t, now)) continue;
    if (!t.isRoot()) cache.memory.push_back(CgroupKey{t.path, t.inode});
    if (t.trim.aim) cache.memory.push_back(CgroupKey{t.trim.aim->path, t.trim.aim->inode});
  }
  return cache;
}

Reads Engine::gradualPass(const Input& input) {
  Tick& k = *turn_.tick;
  const TimePoint now = k.at;
  const Result<proc::Meminfo> mem = readingOr(input.readings.meminfo, "meminfo");
  if (!mem) {
    sampleError(mem.error(), now);
    return {};
  }
  k.mem = *mem;
  measureTargets(now, *mem, input.readings);
  pruneUnits();
  std::vector<PlannedShare> shares = planPass(*mem, now);
  // About to write: the decomposition must be from this turn, so a cgroup created since the
  // last walk under a target with another rule is never reclaimed through its parent. Only
  // when there is something to write: at the floors, idle ticks cost no walk.
  if (!shares.empty() && !policy_.rules.empty() && targets_.lastWalk != now) {
    return treeReads();
  }
  settlePass(std::move(shares));
  return {};
}

std::optional<Reads> Engine::rewalked(const Input& input) {
  const TimePoint now = turn_.tick->at;
  if (!walk(now, [&] { return readingOr(input.readings.tree, "the tree"); }))
    return std::nullopt;  // without a fresh walk nothing is written
  judgeTargets(now);
  return cacheReads(now);
}

void Engine::remeasured(const Input& input) {
  Tick& k = *turn_.tick;
  measureTargets(k.at, *k.mem, input.readings);
  pruneUnits();
  settlePass(planPass(*k.mem, k.at));
}

void Engine::settlePass(std::vector<PlannedShare> shares) {
  Tick& k = *turn_.tick;
  const TimePoint now = k.at;
  scheduleTrims(now);
  if (shares.empty()) {
    // Nothing to write because everything is at its floor (not because a backoff holds it).
    const bool backedOff = (pressure_.machine && pressure_.machine->backoff().active()) ||
                           std::any_of(targets_.all.begin(), targets_.all.end(),
                                       [](const TargetState& t) { return t.scope && t.scope->backoff().active(); });
    if (!backedOff && !k.trims) targets_.restUntil = now + kRecheckAtFloor;
    return;
  }
  if (setup_.dryRun) return dryRunShares(shares, now);
  k.plan.shares = std::move(shares);
}

bool Engine::atFloor(std::uint64_t reclaimable, std::uint64_t floor) const {
  const std::uint64_t above = reclaimable > floor ? reclaimable - floor : 0;
  return aimAbove(above, turn_.overshoot, turn_.excess) < policies::kMinRequestBytes;
}

std::vector<PlannedShare> Engine::planPass(const proc::Meminfo& mem, TimePoint now) const {
  const Scope* machine = pressure_.machine ? &*pressure_.machine : nullptr;
  if (machine && machine->backoff().active()) return {};
  const double machineScale = machine ? machine->backoff().scale() : 1.0;
  // A step halved per backoff, never under pressure.min_step nor over the policy's step.
  auto scaled = [&](std::uint64_t step, double scale) {
    const auto bytes = static_cast<std::uint64_t>(static_cast<double>(step) * scale);
    return std::min(step, std::max(bytes, policy_.pressure.minStep));
  };
  // The machine keeps its floor whatever the targets' floors say.
  const std::uint64_t machineRoom =
      mem.reclaimable() > policy_.reclaim.floor ? mem.reclaimable() - policy_.reclaim.floor : 0;
  const std::uint64_t budget =
      std::min(scaled(policies::stepBytes(mem.memTotal, policy_.reclaim), machineScale), machineRoom);
  std::vector<Candidate> candidates;
  for (std::size_t i = 0; i < targets_.all.size(); ++i) {
    const TargetState& t = targets_.all[i];
    if (!t.active() || !t.measured) continue;
    if (t.scope && t.scope->backoff().active()) continue;
    const std::uint64_t reclaimable = t.measured->reclaimable;
    // A step there would end unasked, and be planned again every tick.
    if (atFloor(reclaimable, t.floor())) continue;
    // Paused until the cache regrows by a chunk (saturating: a value near 2^64 is not "regrown").
    if (t.period.stalledAt && reclaimable - std::min(reclaimable, *t.period.stalledAt) < policy_.reclaim.chunk)
      continue;
    // One stall is seen by the target's scope and the machine's (the root counts every
    // cgroup's): the smaller scale, not their product, or one pressure would quarter the step.
    const double scale = std::min(machineScale, t.scope ? t.scope->backoff().scale() : 1.0);
    candidates.push_back(Candidate{static_cast<int>(i), reclaimable, t.floor(),
                                   scaled(policies::stepBytes(mem.memTotal, t.gov.steps), scale)});
  }
  std::vector<PlannedShare> out;
  std::uint64_t used = 0;
  for (const Share& s : shareBudget(std::move(candidates), budget, policies::kMinRequestBytes)) {
    const TargetState& t = targets_.all[static_cast<std::size_t>(s.target)];
    out.push_back(PlannedShare{t.id, s.bytes, t.measured->reclaimable, false, t.floor(), std::nullopt});
    used += s.bytes;
  }
  planTrims(mem, now, used, out);
  return out;
}

void Engine::dryRunShares(const std::vector<PlannedShare>& shares, TimePoint now) {
  for (const PlannedShare& share : shares) {
    TargetState& t = *find(share.target);
    // A trim probe comes every trim.interval: debug, summarized at info (trim_summary).
    Event& e = emit(share.trim ? Severity::Debug : Severity::Info, "reclaim_step");
    e.add("cgroup", t.label()).add("rule", ruleLabel(t)).add("kind", share.trim ? "trim" : "idle");
    if (share.aim) e.add("at", share.aim->path);  // where it would be written, as a run's line says
    e.add("dry_run", true)
        .mib("asked_mib", share.bytes)
        .mib("reclaimable_mib", share.known)
        .mib("floor_mib", share.floor);
    // A dry run frees nothing: do not repeat each tick (a probe waits for its interval anyway).
    if (!share.trim) t.period.stalledAt = share.known;
    t.wouldReclaimBytes += share.bytes;
    ++t.wouldSteps;
    counters_.wouldReclaim += share.bytes;
    ++counters_.wouldSteps;
    note(&t, "would reclaim " + formatSize(share.bytes) + " from " + t.label(), now);
  }
}

StepLimits Engine::limitsFor(const PlannedShare& share, nanoseconds budget) const {
  const TargetState* t = target(share.target);
  const std::uint64_t floor = !t ? share.known : share.trim ? share.floor : t->floor();
  StepLimits limits{share.bytes, floor, policy_.reclaim.chunk, budget, turn_.overshoot, turn_.excess};
  // A cgroup's chunks are sized against its own floor; the machine's binds them too, by what the
  // pass has freed so far (the machine's cache counts every cgroup's).
  if (const Tick& k = *turn_.tick; k.mem && t && !t->path.empty()) {
    const std::uint64_t reclaimable = k.mem->reclaimable();
    const std::uint64_t machineRoom = reclaimable > policy_.reclaim.floor ? reclaimable - policy_.reclaim.floor : 0;
    limits.room = machineRoom > k.freed ? machineRoom - k.freed : 0;
  }
  return limits;
}

void Engine::chunkWritten(std::uint32_t id, std::uint64_t asked, const cgroup::ReclaimWrite& w, std::int64_t freed,
                          TimePoint now) {
  pressure_.ownStall += duration_cast<microseconds>(w.took);
  pressure_.ownMeter.add(now, static_cast<std::uint64_t>(pressure_.ownStall.count()));
  const double seconds = duration<double>(w.took).count();
  counters_.writeSeconds += seconds;
  TargetState* t = find(id);
  if (t) t->writeSeconds += seconds;
  emit(Severity::Debug, "reclaim_chunk")
      .add("cgroup", t ? t->label() : "?")
      .mib("asked_mib", asked)
      .mibSigned("freed_mib", freed)
      .ms("took_ms", w.took)
      .add("status", toString(w.status()))
      .add("errno", w.result ? 0 : w.result.error().errnoValue());
}

bool Engine::stepEnded(const PlannedShare& share, const StepOutcome& step, bool pressed, TimePoint now,
                       const Readings& readings) {
  bool reprobe = false;
  TargetState* t = find(share.target);
  if (!t) return reprobe;
  turn_.overshoot = step.overshoot;
  turn_.excess = step.excess;
  settleStep(*t, step, pressed, now);
  watchRefaults(*t, share.trim, now, readings);
  Event& e = emit(step.status() == cgroup::ReclaimStatus::Failed ? Severity::Error : Severity::Info, "reclaim_step");
  // A trim probe comes every trim.interval: debug, summarized at info (trim_summary).
  if (share.trim && e.severity() == Severity::Info) e.setSeverity(Severity::Debug);
  e.add("cgroup", t->label())
      .add("rule", ruleLabel(*t))
      .add("kind", share.trim ? "trim" : "idle");
  if (share.aim) e.add("at", share.aim->path);
  e.mib("asked_mib", share.bytes)
      .mib("requested_mib", step.requestedBytes)
      .mibSigned("freed_mib", step.freed())
      .add("chunks", step.chunks)
      .ms("took_ms", step.took)
      .add("end", toString(step.end));
  if (pressed) e.add("stopped_by", "pressure");
  e.add("status", toString(step.status())).add("errno", step.result ? 0 : step.result.error().errnoValue());
  if (!step.result) e.add("error", step.result.error().message());
  e.mib("reclaimable_before_mib", step.before)
      .mib("reclaimable_after_mib", step.after)
      .mib("floor_mib", share.trim ? share.floor : t->floor());
  if (share.trim && step.freed() > 0) {
    t->trim.bytes += static_cast<std::uint64_t>(step.freed());
    t->trim.law.freed(static_cast<std::uint64_t>(step.freed()));
    counters_.trimmed += static_cast<std::uint64_t>(step.freed());
  }
  if (t->unit && step.freed() > 0) counters_.unitReclaimed += static_cast<std::uint64_t>(step.freed());
  if (share.trim) {
    ++t->trim.probes;
    ++counters_.trimProbes;
  }
  switch (step.status()) {
    case cgroup::ReclaimStatus::Done:
    case cgroup::ReclaimStatus::Interrupted:
    case cgroup::ReclaimStatus::Partial: break;
    case cgroup::ReclaimStatus::Unsupported: reprobe = true; break;
    case cgroup::ReclaimStatus::Gone:
      if (!share.aim) targetGone(*t);  // an aimed probe's cgroup went, not the target (aimedStepEnded)
      break;
    case cgroup::ReclaimStatus::Failed:
      // The pause after a step that freed next to nothing was settled with the others
      // (settleStep): one that freed chunks before the refusal is not paused until the cache
      // regrows, which on a machine left idle it never does.
      // A probe the kernel refused met no cache: like a probe never sent, it is no clean time for
      // the step to grow on (TrimLaw::probed), and the stretch starts again at the next probe.
      if (share.trim) t->trim.law.paused();
      break;
  }
  if (share.aim) aimedStepEnded(*t, step, now);
  return reprobe;
}

// Counters, the backoffs' relaxation, and the pause after a step that freed (almost) nothing.
void Engine::settleStep(TargetState& t, const StepOutcome& step, bool pressed, TimePoint now) {
  ++t.steps;
  ++counters_.steps;
  if (step.status() == cgroup::ReclaimStatus::Partial) {
    ++t.partialSteps;
    ++counters_.partial;
  }
  if (step.freed() > 0) {
    t.reclaimedBytes += static_cast<std::uint64_t>(step.freed());
    counters_.reclaimed += static_cast<std::uint64_t>(step.freed());
  }
  note(&t, "reclaimed " + formatSizeSigned(step.freed()) + " from " + t.label(), now);
  if (!pressed && step.freed() > 0) {
    // A step without pressure: the backoff's halving is undone one step at a time.
    if (pressure_.machine) pressure_.machine->backoff().stepSucceeded();
    if (t.scope) t.scope->backoff().stepSucceeded();
  }
  // Asked and (almost) nothing freed — EAGAIN, or cache regrowing as fast as it goes: pause
  // this target until its cache grows by a chunk, so it cannot hold the whole budget every
  // pass while other idle targets wait.
  // A step that freed something ends such a pause: the next one is judged afresh. One that ended
  // unmeasured freed an unknown amount, not nothing: no pause (the cache may never regrow by a chunk).
  // Nor one a signal interrupted (EINTR): the kernel stopped for the signal, not for want of cache.
  const bool interrupted = step.status() == cgroup::ReclaimStatus::Interrupted;
  if (step.end != StepEnd::Unmeasured && !interrupted && step.requestedBytes >= policies::kMinRequestBytes &&
      step.freed() < static_cast<std::int64_t>(policies::kMinRequestBytes))
    t.period.stalledAt = step.after;
  else if (step.freed() >= static_cast<std::int64_t>(policies::kMinRequestBytes))
    t.period.stalledAt.reset();
}

void Engine::fallBack() {
  // The probe still believes in this format: do not send the kernel the same EINVAL every tick.
  // Without rules fall back to dropcache; with rules stop (drop_caches would reach the cgroups
  // they protect) until a reload or restart.
  const std::string why = "memory.reclaim rejected a request with EINVAL after a re-probe accepted its format";
  if (policy_.rules.empty()) {
    mode_ = chooseMode(policies::Mode::DropCache, caps_);
  } else {
    mode_ = EffectiveMode{};
    mode_.mode = policies::Mode::Disabled;
  }
  mode_.fellBack = true;
  mode_.reason = why;
  targets_.all.clear();
  emit(Severity::Warn, "mode").add("effective", toString(mode_.mode)).add("reason", why);
}

}  // namespace reclaimd::controller

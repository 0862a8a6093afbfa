// The engine's part of `reclaimd status` and the metrics.
#include <algorithm>
#include <chrono>

#include "controller/engine/Engine.h"

namespace reclaimd::controller {

namespace {

using Clock = std::function<std::string(TimePoint)>;

ScopeStatus scopeStatus(const Scope& p, TimePoint now, double unixNow, const Clock& when) {
  ScopeStatus out{p.label(), toString(p.feed()), p.backoff().active(), p.events, p.backoffs, p.backoff().scale()};
  if (out.backedOff) {
    const TimePoint at = p.backoff().resumeAt();
    out.resumeAt = when(at);
    out.resumeAtTimestamp = unixNow + std::chrono::duration<double>(at - now).count();
  }
  return out;
}

std::uint64_t above(std::uint64_t bytes, std::uint64_t floor) {
  return bytes > floor ? bytes - floor : 0;
}

}  // namespace

std::string Engine::ruleLabel(const TargetState& t) const {
  if (t.unit) return "unit";
  return t.gov.rule < 0 ? "machine" : t.gov.text;
}

Reads Engine::statusReads() const {
  Reads r;
  r.meminfo = true;
  for (const TargetState& t : targets_.all) {
    if (!t.isRoot() && !t.gone) r.memory.push_back(CgroupKey{t.path, t.inode});
  }
  return r;
}

void Engine::fillReclaimable(Status& s, const Readings& readings) const {
  // Unreadable when asked (or not read), a figure stays as the last turn measured it (a
  // target's) or is left out (what waits), ignoring the error: status answers between turns,
  // which say their own.
  const Result<proc::Meminfo> mem = readingOr(readings.meminfo, "meminfo");
  if (mem) s.waitingBytes = above(mem->reclaimable(), policy_.reclaim.floor);
  for (TargetStatus& ts : s.targets) {
    const auto t = std::find_if(targets_.all.begin(), targets_.all.end(),
                                [&](const TargetState& x) { return x.label() == ts.cgroup; });
    if (t == targets_.all.end() || t->gone) continue;
    if (t->isRoot()) {
      if (mem) ts.reclaimableBytes = above(mem->reclaimable(), t->floor());
    } else if (const Result<MemoryReading>* m = readings.memoryOf(t->ref()); m && *m) {
      ts.reclaimableBytes = above((*m)->reclaimable, t->floor());
    }
  }
}

TargetStatus Engine::targetStatus(const TargetState& t, TimePoint now, double unixNow,
                                  const std::function<std::string(TimePoint)>& when) const {
  TargetStatus ts;
  ts.cgroup = t.label();
  ts.rule = ruleLabel(t);
  ts.mode = toString(t.gov.mode);
  ts.idle = t.idle;
  ts.backedOff = t.scope && t.scope->backoff().active();
  ts.floorBytes = t.floor();
  ts.reclaimableBytes = above(t.lastReclaimable, t.floor());
  // planPass skips it until its cache regrows by a chunk past where its last step stalled.
  if (t.idle && t.period.stalledAt && !setup_.dryRun) {
    const std::uint64_t resume = *t.period.stalledAt + std::min(policy_.reclaim.chunk, ~*t.period.stalledAt);
    if (t.lastReclaimable < resume) ts.waitsForReclaimableBytes = above(resume, t.floor());
  }
  ts.reclaimedBytes = t.reclaimedBytes;
  ts.trimmedBytes = t.trim.bytes;
  fillTrim(ts, t, now, unixNow, when);
  ts.steps = t.steps;
  ts.partial = t.partialSteps;
  ts.writeSeconds = t.writeSeconds;
  ts.wouldReclaimBytes = t.wouldReclaimBytes;
  ts.wouldSteps = t.wouldSteps;
  if (t.lastActionAt) {
    ts.lastAction = when(*t.lastActionAt) + " " + t.lastAction;
    ts.lastActionTimestamp = unixNow - std::chrono::duration<double>(now - *t.lastActionAt).count();
  }
  return ts;
}

void Engine::fill(Status& s, TimePoint now, double unixNow, const std::function<std::string(TimePoint)>& when) const {
  auto unixAt = [&](TimePoint at) { return unixNow - std::chrono::duration<double>(now - at).count(); };
  s.requestedMode = toString(policy_.reclaimMode());
  s.effectiveMode = toString(mode_.mode);
  // The memory.reclaim format only means something where memory.reclaim is written.
  s.format = mode_.mode == policies::Mode::Gradual ? toString(mode_.format) : "";
  s.reason = mode_.reason;
  s.idleState = toString(idle_.verdict.state);
  s.windowBusyPercent = idle_.verdict.windowPercent;
  s.busyThresholdPercent = policy_.idle.thresholdPercent;
  if (auto held = idle_.detector.heldBusyPercent()) s.busyRatio = *held / 100;
  if (!idle_.verdict.idle()) {
    if (auto at = idle_.detector.predictIdle(); at && *at > now)
      s.reclaimStartsInSeconds = std::chrono::duration<double>(*at - now).count();
  }
  if (!idle_.verdict.idle()) s.busyCgroups = idle_.busy.top(kBusyTop, now);
  s.idlePeriods = counters_.idlePeriods;
  s.reclaimedBytes = counters_.reclaimed;
  s.steps = counters_.steps;
  s.partial = counters_.partial;
  s.writeSeconds = counters_.writeSeconds;
  s.dropcaches = counters_.dropcaches;
  s.compactions = counters_.compactions;
  s.floorRaises = counters_.floorRaises;
  s.trimmedBytes = counters_.trimmed;
  s.trimProbes = counters_.trimProbes;
  s.trimHolds = counters_.trimHolds;
  s.unitsTaken = counters_.unitsTaken;
  s.unitReclaimedBytes = counters_.unitReclaimed;
  s.wouldReclaimBytes = counters_.wouldReclaim;
  s.wouldSteps = counters_.wouldSteps;
  if (counters_.lastActionAt) {
    s.lastAction = when(*counters_.lastActionAt) + " " + counters_.lastAction;
    s.lastActionTimestamp = unixAt(*counters_.lastActionAt);
  }
  if (pressure_.machine) s.pressure.push_back(scopeStatus(*pressure_.machine, now, unixNow, when));
  for (const TargetState& t : targets_.all) {
    if (t.scope) s.pressure.push_back(scopeStatus(*t.scope, now, unixNow, when));
    s.targets.push_back(targetStatus(t, now, unixNow, when));
  }
}

}  // namespace reclaimd::controller

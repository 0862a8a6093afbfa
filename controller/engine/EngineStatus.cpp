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
  if (t.gov.rule < 0 || static_cast<std::size_t>(t.gov.rule) >= policy_.rules.size()) return "machine";
  return policy_.rules[static_cast<std::size_t>(t.gov.rule)].pattern.text();
}

void Engine::fillReclaimable(Status& s, Sensors& in) const {
  auto mem = in.meminfo();
  if (mem) s.waitingBytes = above(mem->reclaimable(), policy_.reclaim.floor);
  for (TargetStatus& ts : s.targets) {
    const auto t =
        std::find_if(targets_.begin(), targets_.end(), [&](const TargetState& x) { return x.label() == ts.cgroup; });
    if (t == targets_.end() || t->gone) continue;
    if (t->isRoot()) {
      if (mem) ts.reclaimableBytes = above(mem->reclaimable(), t->floor());
    } else if (auto m = in.memory(t->ref())) {
      ts.reclaimableBytes = above(m->reclaimable, t->floor());
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
  s.format = toString(mode_.format);
  s.reason = mode_.reason;
  s.idleState = toString(verdict_.state);
  s.windowBusyPercent = verdict_.windowPercent;
  s.busyThresholdPercent = policy_.idle.thresholdPercent;
  if (auto held = detector_.heldBusyPercent()) s.busyRatio = *held / 100;
  if (!verdict_.idle()) {
    if (auto at = detector_.predictIdle(); at && *at > now)
      s.reclaimStartsInSeconds = std::chrono::duration<double>(*at - now).count();
  }
  if (!verdict_.idle()) s.busyCgroups = busy_.top(kBusyTop, now);
  s.idlePeriods = idlePeriods_;
  s.reclaimedBytes = reclaimed_;
  s.steps = steps_;
  s.partial = partial_;
  s.writeSeconds = writeSeconds_;
  s.dropcaches = dropcaches_;
  s.compactions = compactions_;
  s.floorRaises = floorRaises_;
  s.trimmedBytes = trimmed_;
  s.trimProbes = trimProbes_;
  s.trimHolds = trimHolds_;
  s.unitsTaken = unitsTaken_;
  s.unitReclaimedBytes = unitReclaimed_;
  s.wouldReclaimBytes = wouldReclaim_;
  s.wouldSteps = wouldSteps_;
  if (lastActionAt_) {
    s.lastAction = when(*lastActionAt_) + " " + lastAction_;
    s.lastActionTimestamp = unixAt(*lastActionAt_);
  }
  if (machineScope_) s.pressure.push_back(scopeStatus(*machineScope_, now, unixNow, when));
  for (const TargetState& t : targets_) {
    if (t.scope) s.pressure.push_back(scopeStatus(*t.scope, now, unixNow, when));
    s.targets.push_back(targetStatus(t, now, unixNow, when));
  }
}

}  // namespace reclaimd::controller

// The engine's part of `reclaimd status` and the metrics.
#include <chrono>

#include "controller/engine/Engine.h"

namespace reclaimd::controller {

namespace {

ScopeStatus scopeStatus(const Scope& p) {
  return ScopeStatus{p.label(), toString(p.watch()), p.backoff().active(), p.events, p.backoffs, p.backoff().scale()};
}

}  // namespace

void Engine::fill(Status& s, TimePoint now, double unixNow, const std::function<std::string(TimePoint)>& when) const {
  auto unixAt = [&](TimePoint at) { return unixNow - std::chrono::duration<double>(now - at).count(); };
  s.requestedMode = toString(policy_.reclaimMode());
  s.effectiveMode = toString(mode_.mode);
  s.format = toString(mode_.format);
  s.reason = mode_.reason;
  s.idleState = toString(verdict_.state);
  s.windowBusyPercent = verdict_.windowPercent;
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
  if (machineScope_) s.pressure.push_back(scopeStatus(*machineScope_));
  for (const TargetState& t : targets_) {
    if (t.scope) s.pressure.push_back(scopeStatus(*t.scope));
    TargetStatus ts;
    ts.cgroup = t.label();
    ts.rule = t.unit           ? "unit"
              : t.gov.rule < 0 ? "machine"
                               : policy_.rules[static_cast<std::size_t>(t.gov.rule)].pattern.text();
    ts.mode = toString(t.gov.mode);
    ts.idle = t.idle;
    ts.backedOff = t.scope && t.scope->backoff().active();
    ts.floorBytes = t.floor();
    ts.reclaimableBytes = t.lastReclaimable > t.floor() ? t.lastReclaimable - t.floor() : 0;
    ts.reclaimedBytes = t.reclaimedBytes;
    ts.trimmedBytes = t.trim.bytes;
    ts.steps = t.steps;
    ts.partial = t.partialSteps;
    ts.writeSeconds = t.writeSeconds;
    ts.wouldReclaimBytes = t.wouldReclaimBytes;
    ts.wouldSteps = t.wouldSteps;
    if (t.lastActionAt) {
      ts.lastAction = when(*t.lastActionAt) + " " + t.lastAction;
      ts.lastActionTimestamp = unixAt(*t.lastActionAt);
    }
    s.targets.push_back(std::move(ts));
  }
}

}  // namespace reclaimd::controller

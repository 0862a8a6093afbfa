// The engine's part of `reclaimd status` and the metrics.
#include "controller/engine/Engine.h"

namespace reclaimd::controller {

void Engine::fill(Status& s, const std::function<std::string(TimePoint)>& when) const {
  s.requestedMode = toString(policy_.reclaimMode());
  s.effectiveMode = toString(mode_.mode);
  s.format = toString(mode_.format);
  s.reason = mode_.reason;
  s.idleState = toString(verdict_.state);
  s.windowBusyPercent = verdict_.windowPercent;
  s.idlePeriods = idlePeriods_;
  s.reclaimedBytes = reclaimed_;
  s.steps = steps_;
  s.partial = partial_;
  s.writeSeconds = writeSeconds_;
  s.dropcaches = dropcaches_;
  s.compactions = compactions_;
  s.floorRaises = floorRaises_;
  auto scope = [](const Scope& p) {
    return ScopeStatus{p.label(), toString(p.watch()), p.backoff().active(), p.events, p.backoffs, p.backoff().scale()};
  };
  if (machineScope_) s.pressure.push_back(scope(*machineScope_));
  for (const TargetState& t : targets_) {
    if (t.scope) s.pressure.push_back(scope(*t.scope));
    s.targets.push_back(TargetStatus{t.label(), t.rule(), toString(t.gov.mode), t.idle,
                                     t.scope && t.scope->backoff().active(), t.floor(), t.reclaimedBytes, t.steps,
                                     t.partialSteps, t.writeSeconds,
                                     t.lastActionAt ? when(*t.lastActionAt) + " " + t.lastAction : ""});
  }
}

}  // namespace reclaimd::controller

// The engine's pressure watching: scopes for the machine and the targets, trigger events,
// totals, backoff and resume, and refault protection.
#include <algorithm>
#include <utility>

#include "base/Quantities.h"
#include "controller/engine/Engine.h"

namespace reclaimd::controller {

using namespace std::chrono;

void Engine::ensureScope(TargetState& t) {
  if (t.scope || t.isRoot() || t.gone || !t.gov.pressure.enabled) return;
  t.scope.emplace(t.label(), t.gov.pressure);
  if (auto held = pressure_.held.find(t.path); held != pressure_.held.end()) {
    t.scope->inherit(held->second);
    pressure_.held.erase(held);
  }
}

Scope* Engine::scopeById(ScopeId id) {
  if (id == kMachineScope) return pressure_.machine ? &*pressure_.machine : nullptr;
  TargetState* t = find(id);
  return t && t->scope ? &*t->scope : nullptr;  // nullptr: its target is gone, the event is stale
}

std::vector<ScopeView> Engine::scopes() const {
  std::vector<ScopeView> out;
  if (pressure_.machine) out.push_back(ScopeView{kMachineScope, "", 0, pressure_.machine->spec()});
  for (const TargetState& t : targets_.all) {
    if (t.scope) out.push_back(ScopeView{t.id, t.path, t.inode, t.scope->spec()});
  }
  return out;
}

void Engine::setFeed(ScopeId id, PressureFeed feed, std::string why, bool gone) {
  Scope* scope = scopeById(id);
  if (!scope) return;
  scope->setFeed(feed, why);
  if (id != kMachineScope) {
    if (feed == PressureFeed::Polling && !std::exchange(said_.cgroupPolling, true))
      emit(Severity::Warn, "pressure_watch").add("scope", "cgroups").add("mode", "polling").add("reason", why);
    if (feed == PressureFeed::Off && !gone) {
      // This target's reclaim no longer stops on its own pressure: worth a line (per cgroup,
      // so the event log's per-cgroup limit holds a tree of them).
      emit(Severity::Warn, "pressure_watch")
          .add("scope", scope->label())
          .add("cgroup", scope->label())
          .add("mode", "off")
          .add("reason", why);
      return;
    }
    emit(Severity::Debug, "pressure_watch")
        .add("scope", scope->label())
        .add("mode", toString(feed))
        .add("trigger", psi::triggerText(scope->spec()));
    return;
  }
  switch (feed) {
    case PressureFeed::Pending: break;
    case PressureFeed::Trigger:
      emit(Severity::Info, "pressure_watch")
          .add("scope", "machine")
          .add("mode", "trigger")
          .add("trigger", psi::triggerText(scope->spec()))
          .add("source", why);
      break;
    case PressureFeed::Polling:
      emit(Severity::Warn, "pressure_watch")
          .add("scope", "machine")
          .add("mode", "polling")
          .add("trigger", psi::triggerText(scope->spec()))
          .add("reason", why);
      break;
    case PressureFeed::Off:
      emit(Severity::Warn, "pressure_watch").add("scope", "machine").add("mode", "off").add("reason", why);
  }
}

void Engine::pressureEvent(const ScopeEvent& event, TimePoint now) {
  const ScopeId id = event.scope;
  Scope* scope = scopeById(id);
  if (!scope) return;
  if (event.gone) {
    emit(Severity::Debug, "pressure_watch")
        .add("scope", scope->label())
        .add("mode", "off")
        .add("reason", "cgroup removed");
    scope->setFeed(PressureFeed::Off, "cgroup removed");
    if (TargetState* t = find(id)) targetGone(*t);
    return;
  }
  ++scope->events;
  // The event says the threshold was crossed; its total, read as the event was taken, gives the
  // numbers (the kernel sends no other event in this window). The machine's total includes
  // reclaimd's own stall: an event that our own writes account for is not pressure.
  const Result<std::uint64_t> total = readingOr(event.total, "the total of a scope whose trigger fired");
  const bool machine = id == kMachineScope;
  // An unreadable total leaves the kernel's word alone: the event is judged as a first one.
  if (!total) sampleError(total.error(), now);
  const bool crossed =
      total && scope->add(now, *total, machine ? static_cast<std::uint64_t>(pressure_.ownStall.count()) : 0);
  const bool measured = total && scope->measured();
  // Without a reading a window old the meter cannot tell (the trigger is the first word of this
  // stall): the kernel's event stands unless reclaimd's own stall in the window could explain it.
  pressure_.ownMeter.add(now, static_cast<std::uint64_t>(pressure_.ownStall.count()));
  const bool ownExplains = pressure_.ownMeter.stallOver(scope->spec().window) >= scope->spec().stall;
  if (machine && !crossed && (measured || ownExplains)) {
    emit(Severity::Debug, "pressure_ignored")
        .add("scope", "machine")
        .add("reason", "our own reclaim stall")
        .ms("stall_ms", scope->lastStall());
    return;
  }
  reportPressure(*scope, now, "trigger");
}

void Engine::reportPressure(Scope& scope, TimePoint now, const char* source) {
  if (!scope.backoff().pressure(now)) return;
  ++scope.backoffs;
  note(nullptr, "backed off: pressure in " + scope.label(), now);
  emit(Severity::Warn, "backoff")
      .add("scope", scope.label())
      .add("source", source)
      .ms("stall_ms", scope.lastStall())
      .ms("threshold_ms", scope.spec().stall)
      .add("window_ms", duration<double, std::milli>(scope.spec().window).count(), 0)
      .add("consecutive", scope.backoff().consecutive())
      .add("step_scale", scope.backoff().scale(), 4)
      .add("resume_after_s", duration<double>(scope.backoff().resumeAt() - now).count(), 0);
}

void Engine::takeTotal(Scope& scope, ScopeId id, TimePoint now, const Result<std::uint64_t>& total) {
  const std::uint64_t own = id == kMachineScope ? static_cast<std::uint64_t>(pressure_.ownStall.count()) : 0;
  if (!total) {
    // This sample of the total is skipped, ignoring it: the calm period still runs out by the
    // clock, or a backoff would hold every step for as long as the file stays unreadable.
    sampleError(total.error(), now);
  } else if (scope.add(now, *total, own)) {
    reportPressure(scope, now, "total");
  }
  resumeIfCalm(scope, now);
}

void Engine::resumeUnwatched(Scope& scope, TimePoint now) {
  if (scope.feed() == PressureFeed::Off) resumeIfCalm(scope, now);
}

void Engine::resumeIfCalm(Scope& scope, TimePoint now) {
  if (scope.backoff().resume(now)) {
    emit(Severity::Info, "resume")
        .add("scope", scope.label())
        .add("calm_s", duration<double>(now - scope.backoff().lastPressure()).count(), 0)
        .ms("stall_ms", scope.lastStall())
        .add("step_scale", scope.backoff().scale(), 4);
  }
}

Reads Engine::pressureReads(std::uint32_t id) const {
  Reads r;
  if (pressure_.machine && pressure_.machine->readsTotals()) r.pressure.push_back(kMachineScope);
  const TargetState* t = target(id);
  if (t && t->scope && t->scope->readsTotals()) r.pressure.push_back(t->id);
  return r;
}

bool Engine::pressureStops(std::uint32_t id, TimePoint now, const Readings& readings) {
  // Both asked for before the check (pressureReads): one missing is taken as unreadable.
  auto take = [&](Scope& scope, ScopeId scopeId) {
    if (scope.readsTotals())
      takeTotal(scope, scopeId, now, readingOr(readings.pressureOf(scopeId), "a pressure total"));
  };
  if (pressure_.machine) take(*pressure_.machine, kMachineScope);
  TargetState* t = find(id);
  if (t && t->scope) take(*t->scope, t->id);
  return (pressure_.machine && pressure_.machine->backoff().active()) ||
         (t && t->scope && t->scope->backoff().active());
}

// Starts the refault watch after a step: a jump means the step cut into the working set. The
// counter is the one read after the step's last chunk; a step that wrote none starts from this
// turn's measurement. A probe's watch lasts a grace: the work that never ends reads its hot set
// every tens of seconds, and what a probe took of it comes back only then (a hot set read once a
// minute was taken and read back every minute, unseen by a 10 s watch). There is no pressure
// to evict it meanwhile: those refaults are the probes' doing.
void Engine::watchRefaults(TargetState& t, bool trim, TimePoint now, const Readings& readings) {
  if (!t.gov.pressure.enabled) return;
  const nanoseconds window = trim ? t.gov.idle.grace : nanoseconds(0);
  // An unreadable counter leaves this step unwatched, ignoring it: the next step starts a watch.
  if (t.isRoot()) {
    if (!readings.machineRefaults) {
      // Unread this turn too (that failure was said then): unwatched as above.
      if (pressure_.machineRefaults) t.refaults.stepEnded(now, pressure_.machineRefaults->refaults, window);
      return;
    }
    if (!*readings.machineRefaults) return sampleError(readings.machineRefaults->error(), now);
    t.refaults.stepEnded(now, (*readings.machineRefaults)->refaults, window);
    return;
  }
  const Result<MemoryReading>* m = readings.memoryOf(t.ref());
  if (!m) {
    if (t.measured) t.refaults.stepEnded(now, t.measured->refaults, window);
    return;
  }
  if (!*m) return readFailed(t, m->error());
  t.refaults.stepEnded(now, (*m)->refaults, window);
}

// Without /proc/vmstat the root's refaults are not judged, and a wait for them would keep it
// measured on every tick, and (a probe's round coming in) never probed again, for as long as the
// file stays unreadable. Each ends by the clock instead, as a backoff whose pressure totals cannot
// be read does, where it would end without more readings: a step's watch at its window's end, a
// round after half a grace (settleTrim's limit). Both unjudged: the law cannot judge a round
// without the counter; the jump that began it was real, so the next probe waits an interval.
void Engine::lapseRefaultWaits(TargetState& t, TimePoint now) {
  const char* ended = t.refaults.lapse(now) ? "step watch" : nullptr;
  if (t.trim.settling && now - t.trim.settling->since >= t.gov.idle.grace / 2) {
    t.trim.settling.reset();
    t.trim.next = std::max(t.trim.next, now + t.gov.trim.interval);
    ended = "probe round";
  }
  if (!ended || std::exchange(said_.refaultWaitEnded, true)) return;
  emit(Severity::Warn, "refault_wait_ended")
      .add("cgroup", t.label())
      .add("wait", ended)
      .add("reason", "/proc/vmstat is unreadable: the wait ended by the clock, unjudged; said once until it is read");
}

void Engine::checkRefaults(TargetState& t, TimePoint now) {
  if (!t.measured || !t.gov.pressure.enabled) return;
  if (t.trim.settling) return;  // its round is judged when it is in (settleTrim)
  auto jump = t.refaults.check(now, t.measured->refaults);
  if (!jump) return;
  // A busy target's watch follows a probe: its round is judged once the refaults are in.
  if (!t.inPeriod) {
    t.trim.settling = TrimState::Settling{*jump, now, now, t.measured->refaults};
    return;
  }
  const std::uint64_t raised = std::max(t.measured->reclaimable, t.gov.floor);
  t.period.raisedFloor = std::max(raised, t.period.raisedFloor.value_or(0));
  ++counters_.floorRaises;
  emit(Severity::Warn, "floor_raised")
      .add("cgroup", t.label())
      .mib("floor_mib", *t.period.raisedFloor)
      .add("reason", "refaults jumped after a step: it cut into the working set")
      .add("excess_pages", jump->excessPages)
      .add("rate_before_pps", jump->rateBefore, 1)
      .add("rate_after_pps", jump->rateAfter, 1);
}

}  // namespace reclaimd::controller

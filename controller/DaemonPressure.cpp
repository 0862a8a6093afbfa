// The daemon's pressure watching: scopes for the machine and the targets, trigger events,
// totals, backoff and resume, and refault protection.
#include <fcntl.h>
#include <spdlog/spdlog.h>

#include "base/Units.h"
#include "cgroup/ControlFiles.h"
#include "controller/Daemon.h"
#include "controller/LogText.h"
#include "proc/Vmstat.h"

namespace reclaimd::controller {

using namespace std::chrono;

namespace {

double ms(microseconds d) {
  return duration<double, std::milli>(d).count();
}

}  // namespace

void Daemon::watchScope(PressureScope& scope, std::uint32_t id) {
  if (scope.eventFd() < 0) return;
  if (auto added = watch_.add(scope, id); !added) {
    // EPERM: not something epoll can wait on (a regular file in a test fixture).
    scope.dropEventSource(added.error().message());
  }
}

void Daemon::setUpMachinePressure() {
  machinePressure_.reset();
  const auto& settings = policy_.pressure;
  if (!settings.enabled) {
    spdlog::info("event=pressure_watch scope=machine mode=off reason=\"pressure.enabled is false\"");
    return;
  }
  machinePressure_.emplace("machine", settings);
  machinePressure_->open(AT_FDCWD, options_.paths.proc(kProcPressureMemory));
  // The root cgroup's memory.pressure carries the same system-wide figures; where /proc takes
  // no trigger (a container's read-only /proc: EROFS) the host's cgroup tree may.
  if (machinePressure_->eventFd() < 0 && cgroupRoot_) {
    PressureScope viaRoot("machine", settings);
    viaRoot.open(cgroupRoot_.get(), cgroup::kMemoryPressure);
    if (viaRoot.eventFd() >= 0) {
      spdlog::info("event=pressure_watch scope=machine source={}/memory.pressure reason={}", cgroupRootPath_,
                   quoted("no trigger on /proc: " + machinePressure_->why()));
      machinePressure_.emplace(std::move(viaRoot));
    }
  }
  watchScope(*machinePressure_, 0);
  if (!machinePressure_->readable()) {
    spdlog::warn("event=pressure_watch scope=machine mode=off reason={}", quoted(machinePressure_->why()));
    machinePressure_.reset();
  } else if (machinePressure_->eventFd() < 0) {
    spdlog::warn("event=pressure_watch scope=machine mode=polling trigger={} reason={}",
                 quoted(machinePressure_->triggerText()), quoted(machinePressure_->why()));
  } else {
    spdlog::info("event=pressure_watch scope=machine mode=trigger trigger={}", quoted(machinePressure_->triggerText()));
  }
}

void Daemon::ensureScope(Target& t) {
  if (t.pressure || t.isRoot() || !t.cgroup || !t.gov.pressure.enabled) return;
  t.pressure.emplace(t.label(), t.gov.pressure);
  t.pressure->open(t.cgroup->dirFd(), cgroup::kMemoryPressure);
  t.pressureId = nextScopeId_++;
  if (nextScopeId_ == 0) nextScopeId_ = 1;  // 0 is the machine's
  watchScope(*t.pressure, t.pressureId);
  if (t.pressure->eventFd() < 0 && t.pressure->readable() && !std::exchange(cgroupPollingLogged_, true)) {
    spdlog::warn("event=pressure_watch scope=cgroups mode=polling reason={}", quoted(t.pressure->why()));
  }
  spdlog::debug("event=pressure_watch scope={} mode={} trigger={}", t.label(),
                t.pressure->eventFd() >= 0 ? "trigger"
                : t.pressure->readable()   ? "polling"
                                           : "off",
                quoted(t.pressure->triggerText()));
}

PressureScope* Daemon::scopeById(std::uint32_t id) {
  if (id == 0) return machinePressure_ ? &*machinePressure_ : nullptr;
  if (!targets_) return nullptr;
  for (Target& t : targets_->all()) {
    if (t.pressure && t.pressureId == id) return &*t.pressure;
  }
  return nullptr;  // its target is gone: the event is stale
}

void Daemon::handlePressureEvents(TimePoint now) {
  for (const WatchEvent& e : watch_.take()) {
    PressureScope* scope = scopeById(e.id);
    if (!scope) continue;
    if (e.gone) {
      spdlog::debug("event=pressure_watch scope={} mode=off reason=\"cgroup removed\"", scope->label());
      scope->dropEventSource("cgroup removed");
      if (targets_) targets_->invalidate();
      continue;
    }
    ++scope->events;
    // The event says the threshold was crossed; read the total now for the numbers, and
    // because the kernel sends no other event in this window. The machine's total includes
    // reclaimd's own stall: an event that our own writes account for is not pressure.
    const bool machine = machinePressure_ && scope == &*machinePressure_;
    const bool crossed = scope->sample(now, machine ? ownStall_ : std::chrono::microseconds(0));
    if (machine && !crossed) {
      spdlog::debug("event=pressure_ignored scope=machine reason=\"our own reclaim stall\" stall_ms={:.1f}",
                    ms(scope->lastStall()));
      continue;
    }
    reportPressure(*scope, now, "trigger");
  }
}

void Daemon::reportPressure(PressureScope& scope, TimePoint now, const char* source) {
  if (!scope.backoff().pressure(now)) return;
  ++scope.backoffs;
  noteAction("backed off: pressure in " + scope.label());
  spdlog::warn(
      "event=backoff scope={} source={} stall_ms={:.1f} threshold_ms={:.1f} window_ms={:.0f} consecutive={} "
      "step_scale={} resume_after_s={:.0f}",
      scope.label(), source, ms(scope.lastStall()), ms(scope.threshold()), ms(scope.window()),
      scope.backoff().consecutive(), scope.backoff().scale(),
      duration<double>(scope.backoff().resumeAt() - now).count());
}

void Daemon::samplePressure(PressureScope& scope, TimePoint now) {
  const bool machine = machinePressure_ && &scope == &*machinePressure_;
  if (scope.sample(now, machine ? ownStall_ : microseconds(0))) reportPressure(scope, now, "total");
  if (scope.backoff().resume(now)) {
    spdlog::info("event=resume scope={} calm_s={:.0f} stall_ms={:.1f} step_scale={}", scope.label(),
                 duration<double>(now - scope.backoff().lastPressure()).count(), ms(scope.lastStall()),
                 scope.backoff().scale());
  }
}

bool Daemon::pressureStops(Target& t) {
  const TimePoint now = clock_.now();
  handlePressureEvents(now);
  if (machinePressure_) samplePressure(*machinePressure_, now);
  if (t.pressure) samplePressure(*t.pressure, now);
  return (machinePressure_ && machinePressure_->backoff().active()) || (t.pressure && t.pressure->backoff().active());
}

std::optional<std::uint64_t> Daemon::readMachineRefaults() {
  if (!vmstat_) {
    auto opened = KeptFile::open(AT_FDCWD, options_.paths.proc(kProcVmstat));
    if (!opened) return std::nullopt;
    vmstat_ = std::move(*opened);
  }
  auto text = vmstat_->read();
  if (!text) return std::nullopt;
  auto refaults = proc::parseRefaultFile(*text);
  return refaults ? std::optional(*refaults) : std::nullopt;
}

void Daemon::checkRefaults(Target& t, TimePoint now) {
  if (!t.measured || !t.gov.pressure.enabled) return;
  const auto [cache, refaults] = *t.measured;
  auto jump = t.refaults.check(now, refaults);
  if (!jump) return;
  const std::uint64_t raised = std::max(cache, t.gov.floor);
  t.period.raisedFloor = std::max(raised, t.period.raisedFloor.value_or(0));
  ++floorRaises_;
  spdlog::warn(
      "event=floor_raised cgroup={} floor_mib={} reason=\"refaults jumped after a step: it cut into the working "
      "set\" excess_pages={} rate_before_pps={:.1f} rate_after_pps={:.1f}",
      t.label(), formatMiB(*t.period.raisedFloor), jump->excessPages, jump->rateBefore, jump->rateAfter);
}

}  // namespace reclaimd::controller

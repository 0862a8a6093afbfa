// The engine's turn: idle detection, the dropcache mode, when to wake, and what it says.
#include "controller/engine/Engine.h"

#include <algorithm>

#include "base/Quantities.h"
#include "policies/Step.h"

namespace reclaimd::controller {

using namespace std::chrono;

namespace {

// A malformed /proc/stat is said once a minute at most, with a count, not every second.
constexpr nanoseconds kSampleErrorEvery = 60s;

}  // namespace

IdleConfig idleConfigOf(const policies::IdleSettings& s) {
  return IdleConfig{s.thresholdPercent, s.grace, s.interval};
}

Engine::Engine(policies::Policy policy, EngineSetup setup)
    : policy_(std::move(policy)),
      setup_(std::move(setup)),
      idle_(idleConfigOf(policy_.idle), policy_.idle.grace, setup_.ownCgroup) {
  setPolicy(policy_);
}

void Engine::setPolicy(policies::Policy policy) {
  policy_ = std::move(policy);
  idle_.detector.reconfigure(idleConfigOf(policy_.idle));
  idle_.busy.setWindow(policy_.idle.grace);
  applyRuleDetectors();
  compact_ = policy_.reclaim.compact && caps_.compactMemory;
  // Targets keep their state; the next walk re-resolves their rules. Their scopes take the new
  // settings as they are made again.
  // A backoff in progress outlives the scopes: the calm period is the machine's, not the file's.
  targets_.lastWalk.reset();
  pressure_.held.clear();
  for (TargetState& t : targets_.all) {
    if (t.scope) pressure_.held.emplace(t.path, std::move(*t.scope));
    t.scope.reset();
  }
  std::optional<Scope> machine = std::move(pressure_.machine);
  pressure_.machine.reset();
  for (auto& [id, w] : pressure_.watched)
    w.stale = true;  // every scope is made anew, and watched anew
  pressure_.watchChanges.clear();
  if (!policy_.pressure.enabled) {
    emit(Severity::Info, "pressure_watch")
        .add("scope", "machine")
        .add("mode", "off")
        .add("reason", "pressure.enabled is false");
    return;
  }
  pressure_.machine.emplace("machine", policy_.pressure);
  if (machine) pressure_.machine->inherit(*machine);
}

// Detectors for the idle settings that rules use beyond the machine's; history is kept for
// settings that stay, so a reload does not restart their grace periods.
void Engine::applyRuleDetectors() {
  auto same = [](const IdleConfig& a, const IdleConfig& b) {
    return a.thresholdPercent == b.thresholdPercent && a.grace == b.grace && a.interval == b.interval;
  };
  const IdleConfig machine = idleConfigOf(policy_.idle);
  std::vector<RuleDetector> next;
  for (const auto& rule : policy_.rules) {
    if (rule.idleSource == policies::IdleSource::Cgroup) continue;
    const IdleConfig c = idleConfigOf(rule.idle);
    if (same(machine, c)) continue;
    if (std::any_of(next.begin(), next.end(), [&](const RuleDetector& d) { return same(d.config, c); })) continue;
    auto old =
        std::find_if(idle_.rules.begin(), idle_.rules.end(), [&](const RuleDetector& d) { return same(d.config, c); });
    if (old != idle_.rules.end())
      next.push_back(std::move(*old));
    else
      next.push_back(RuleDetector{c, IdleDetector(c), {}});
  }
  idle_.rules = std::move(next);
}

const IdleVerdict& Engine::systemVerdict(const policies::IdleSettings& idle) const {
  const IdleConfig c = idleConfigOf(idle);
  for (const auto& d : idle_.rules) {
    if (d.config.thresholdPercent == c.thresholdPercent && d.config.grace == c.grace && d.config.interval == c.interval)
      return d.verdict;
  }
  return idle_.verdict;
}

void Engine::setCapabilities(const Capabilities& caps, std::string_view why) {
  caps_ = caps;
  compact_ = policy_.reclaim.compact && caps_.compactMemory;
  const EffectiveMode chosen = chooseMode(policy_.reclaimMode(), caps_, !policy_.rules.empty());
  const bool changed = !(chosen == mode_) || chosen.reason != mode_.reason;
  mode_ = chosen;
  targets_.lastWalk.reset();
  if (mode_.mode != policies::Mode::Gradual) targets_.all.clear();
  if (!changed) return;
  emit(mode_.fellBack ? Severity::Warn : Severity::Info, "mode")
      .add("requested", toString(policy_.reclaimMode()))
      .add("effective", toString(mode_.mode))
      .add("format", mode_.mode == policies::Mode::Gradual ? toString(mode_.format) : "-")
      .add("why", why)
      .add("reason", mode_.reason);
}

void Engine::reprobed(const Capabilities& caps) {
  const EffectiveMode was = mode_;
  setCapabilities(caps, "EINVAL from memory.reclaim");
  if (mode_ == was) fallBack();
}

void Engine::observeCpu(const CpuSample& sample) {
  idle_.verdict = idle_.detector.add(sample);
  for (auto& d : idle_.rules)
    d.verdict = d.detector.add(sample);
  const IdleVerdict& v = idle_.verdict;
  if (v.state == IdleState::Blocked && !idle_.blockedSince) idle_.blockedSince = sample.at;
  if (v.periodStarted) idle_.blockedFor = idle_.blockedSince ? sample.at - *idle_.blockedSince : nanoseconds(0);
  if (v.state != IdleState::Blocked) idle_.blockedSince.reset();
  if (v.reset) emit(Severity::Info, "idle_reset").add("reason", "cpu counters went backwards");
  if (v.periodEnded) {
    emit(Severity::Info, "idle_left")
        .add("window_busy_pct", v.windowPercent, 3)
        .add("interval_busy_pct", v.intervalPercent, 3);
    idle_.period = PeriodState{};
  }
  if (v.periodStarted) ++counters_.idlePeriods;  // said with the meminfo it asks for (sayIdleEntered)
  if (!v.idle() && setup_.traceTicks) {
    emit(Severity::Trace, "tick")
        .add("state", toString(v.state))
        .add("window_busy_pct", v.windowPercent, 3)
        .add("interval_busy_pct", v.intervalPercent, 3);
  }
}

// Why memory is still held, said at info at most once a minute and only when the answer (the
// detector's state) changes: a busy machine otherwise logs nothing for as long as it is busy.
bool Engine::heldLineDue(TimePoint now) {
  if (mode_.mode == policies::Mode::Disabled || idle_.verdict.idle()) {
    said_.held.reset();
    return false;
  }
  if (said_.held && now - said_.heldAt < kHeldEvery) return false;  // first: the check runs every tick
  // The answer: the state and the cgroups named (not their shares, which move every scan).
  std::string names;
  for (const BusyCgroup& b : idle_.busy.top(kBusyTop, now))
    names += b.path + "\n";
  const bool same = said_.held && *said_.held == idle_.verdict.state && said_.heldNames == names;
  if (said_.held && same) return false;
  // One sample says nothing yet.
  return idle_.verdict.state != IdleState::Warmup || idle_.detector.heldBusyPercent().has_value();
}

void Engine::sayWhyHeld(TimePoint now, const Result<proc::Meminfo>& mem) {
  const auto busy = idle_.busy.top(kBusyTop, now);
  said_.held = idle_.verdict.state;
  said_.heldNames.clear();
  for (const BusyCgroup& b : busy)
    said_.heldNames += b.path + "\n";
  said_.heldAt = now;
  // Unreadable, the line goes without waiting_mib, the failed read a skipped sample (said first:
  // that event must not come between the line and its fields).
  if (!mem) sampleError(mem.error(), now);
  const auto warmupShare = idle_.detector.heldBusyPercent();
  Event& e = emit(Severity::Info, "held");
  e.add("state", toString(idle_.verdict.state))
      .add("busy_pct", idle_.verdict.state == IdleState::Warmup ? warmupShare.value_or(0) : idle_.verdict.windowPercent,
           3)
      .add("threshold_pct", policy_.idle.thresholdPercent, 3);
  if (mem) {
    const std::uint64_t r = mem->reclaimable();
    e.mib("waiting_mib", r > policy_.reclaim.floor ? r - policy_.reclaim.floor : 0);
  }
  if (auto at = idle_.detector.predictIdle(); at && *at > now)
    e.add("reclaim_in_s_if_quiet", std::chrono::duration<double>(*at - now).count(), 0);
  if (!busy.empty()) e.add("busy_cgroups", formatBusyCgroups(busy));
  // What goes on meanwhile: busy targets' cold cache is trimmed (gradual), or nothing.
  const bool trimming = mode_.mode == policies::Mode::Gradual && policy_.trim.enabled;
  e.add("trim", trimming ? "on" : "off").mib("trimmed_mib", counters_.trimmed);
}

void Engine::sayIdleEntered(TimePoint now, const Result<proc::Meminfo>& mem) {
  // Unreadable, the period starts all the same and the line says "?" for what waits; the failed
  // read is a skipped sample like any other.
  if (!mem) sampleError(mem.error(), now);
  Event& e = emit(Severity::Info, "idle_entered");
  e.add("window_busy_pct", idle_.verdict.windowPercent, 3)
      .add("interval_busy_pct", idle_.verdict.intervalPercent, 3)
      .add("blocked_s", std::chrono::duration<double>(idle_.blockedFor).count(), 3)
      .add("reclaimable_mib", mem ? formatMiB(mem->reclaimable()) : "?");
  // When the detector judged the work to have ended: a start later than that plus the grace is
  // the daemon's; a work end later than the workload's own is the machine's tail of work.
  if (auto ended = idle_.detector.workEnded())
    e.add("since_work_s", std::chrono::duration<double>(now - *ended).count(), 3);
}

void Engine::dropCacheTurn(Plan& plan) {
  const bool pressed = pressure_.machine && pressure_.machine->backoff().active();
  const DropPlan drop = decideDrop(idle_.verdict, idle_.period, pressed, compact_);
  if (idle_.verdict.idle() && pressed && !idle_.period.dropped && !std::exchange(said_.dropPaused, true))
    emit(Severity::Info, "dropcache_paused").add("reason", "memory pressure");
  if (!drop.dropCache) return;
  said_.dropPaused = false;
  idle_.period.dropped = true;
  plan.dropCache = true;  // a dry run says what it would drop, with the meminfo read first
  plan.compactAfterDrop = drop.compact;
}

// A dry run's drop: what it would free.
void Engine::wouldDrop(const Result<proc::Meminfo>& mem, TimePoint now) {
  // Unreadable, the would-be drop is said with "?" and adds nothing to what would have been
  // reclaimed (a figure is not made up); the failed read is a skipped sample.
  if (!mem) sampleError(mem.error(), now);
  emit(Severity::Info, "dropcache")
      .add("dry_run", true)
      .add("reclaimable_mib", mem ? formatMiB(mem->reclaimable()) : "?");
  if (mem) counters_.wouldReclaim += mem->reclaimable();
  note(nullptr, "would drop caches", now);
}

void Engine::dropped(const Result<void>& result, std::optional<std::uint64_t> before,
                     std::optional<std::uint64_t> after, nanoseconds took, TimePoint now) {
  if (!result) {
    emit(Severity::Error, "dropcache").add("error", result.error().message()).ms("took_ms", took);
    return;
  }
  ++counters_.dropcaches;
  Event& e = emit(Severity::Info, "dropcache").ms("took_ms", took);
  if (!before || !after) {
    // A figure that could not be read is not made up: the drop is said without its amount.
    note(nullptr, "dropped caches", now);
    return;
  }
  note(nullptr, "dropped caches, " + formatSize(*before > *after ? *before - *after : 0) + " freed", now);
  e.mibSigned("freed_mib", static_cast<std::int64_t>(*before) - static_cast<std::int64_t>(*after))
      .mib("reclaimable_before_mib", *before)
      .mib("reclaimable_after_mib", *after);
}

void Engine::compacted(const Result<void>& result, nanoseconds took, TimePoint) {
  idle_.period.compacted = true;
  if (!result) {
    emit(Severity::Warn, "compact").add("error", result.error().message()).ms("took_ms", took);
    return;
  }
  ++counters_.compactions;
  emit(Severity::Info, "compact").ms("took_ms", took);
}

bool Engine::wantsCompaction(std::uint64_t freed) {
  if (!compact_) return false;
  turn_.uncompacted += freed;
  // While the machine is busy (probes, busy neighbours), compaction waits for kCompactAfterBusy
  // freed: a probe frees a few MiB, compaction walks all of memory in reclaimd's own CPU time
  // (hundreds of ms under TCG), and the host takes only whole 2 MiB blocks anyway.
  const std::uint64_t enough = idle_.verdict.idle() ? policies::kMinRequestBytes : kCompactAfterBusy;
  const bool wanted = turn_.uncompacted >= enough || (idle_.verdict.idle() && !idle_.period.compacted);
  if (wanted) turn_.uncompacted = 0;
  if (!wanted || !setup_.dryRun) return wanted;
  if (!std::exchange(idle_.period.compacted, true)) emit(Severity::Info, "compact").add("dry_run", true);
  return false;
}

TimePoint Engine::nextWake(TimePoint now) const {
  const auto& idle = policy_.idle;
  const nanoseconds regular = idle.samplePeriod;
  // The sample period while busy: the tightest any busy detector asks for, regular when none is.
  nanoseconds period = regular;
  if (idle_.verdict.spanPercent > idle.thresholdPercent)
    period = std::min(period, busySamplePeriod(idle, idle_.detector.config()));
  // Candidate wake-ups: predictions of when something becomes idle, if it stays quiet.
  std::vector<std::optional<TimePoint>> predicted;
  if (!idle_.verdict.idle()) predicted.push_back(idle_.detector.predictIdle());
  for (const auto& d : idle_.rules) {
    if (d.verdict.spanPercent > d.config.thresholdPercent) period = std::min(period, busySamplePeriod(idle, d.config));
    if (!d.verdict.idle()) predicted.push_back(d.detector.predictIdle());
  }
  for (const TargetState& t : targets_.all) {
    if (!t.cpuIdle) continue;
    if (t.cpuVerdict.spanPercent > t.gov.idle.thresholdPercent) period = std::min(period, fastestSamplePeriod(idle));
    if (!t.cpuVerdict.idle()) predicted.push_back(t.cpuIdle->predictIdle());
  }
  TimePoint next = now + (idle.predict ? period : regular);
  if (idle.predict) {
    // A millisecond's margin so the sample lands after the predicted instant, not on it. A
    // prediction already past is a detector's not fed this turn (an unreadable /proc/stat or
    // cpu.stat): waking a millisecond later would read it again a thousand times a second.
    for (const auto& p : predicted) {
      if (p && *p >= now && *p + 1ms < next) next = *p + 1ms;
    }
  }
  if (mode_.mode == policies::Mode::Gradual && !policy_.rules.empty() && targets_.lastWalk)
    next = std::min(next, std::max(*targets_.lastWalk + kWalkPeriod, now + 1ms));
  // A probe due before the next sample: wake for it, so probes keep their interval.
  if (mode_.mode == policies::Mode::Gradual) {
    for (const TargetState& t : targets_.all) {
      if (t.trim.baselined && t.trim.next > now && trimDue(t, t.trim.next)) next = std::min(next, t.trim.next);
    }
  }
  return next;
}

void Engine::sampleError(const Error& error, TimePoint now) {
  ++counters_.sampleErrors;
  if (counters_.sampleErrors == 1 || !said_.sampleErrorAt || now - *said_.sampleErrorAt >= kSampleErrorEvery) {
    emit(Severity::Warn, "sample_skipped").add("error", error.message()).add("count", counters_.sampleErrors);
    said_.sampleErrorAt = now;
  }
}

void Engine::note(TargetState* t, std::string what, TimePoint now) {
  counters_.lastAction = std::move(what);
  counters_.lastActionAt = now;
  if (t == nullptr) return;
  t->lastAction = counters_.lastAction;
  t->lastActionAt = now;
}

Event& Engine::emit(Severity severity, std::string_view name) {
  return events_.emplace_back(severity, name);
}

}  // namespace reclaimd::controller

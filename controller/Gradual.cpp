// The gradual mode's pass: judge each target idle or not, share the step budget among the
// idle ones, write each share in chunks, compact.
#include <spdlog/spdlog.h>

#include <algorithm>

#include "base/Units.h"
#include "controller/Budget.h"
#include "controller/Daemon.h"
#include "controller/LogText.h"
#include "controller/ReclaimStep.h"
#include "policies/Step.h"

namespace reclaimd::controller {

using namespace std::chrono;

namespace {

// A pass's writes stop after this much time even if budget remains; the next tick goes on.
// Keeps each loop turn short however slow the kernel is.
constexpr nanoseconds kPassBudget = 1s;

}  // namespace

void Daemon::refreshTargets(TimePoint now) {
  auto stats = targets_->refresh(policy_, now);
  if (!stats) {
    spdlog::error("event=walk_failed error={}", quoted(stats.error().message()));
    return;
  }
  spdlog::debug("event=walk cgroups={} targets={} vanished={} symlinks_skipped={}", stats->cgroups, stats->targets,
                stats->vanished, stats->symlinks);
}

void Daemon::judgeTargets() {
  const bool announce = !policy_.rules.empty();  // without rules the root mirrors the machine
  for (Target& t : targets_->all()) {
    const bool systemIdle = !t.usesSystemCpu() || systemVerdict(t.gov.idle).idle();
    const bool cgroupIdle = !t.usesCgroupCpu() || (t.cpuIdle && t.cpuVerdict.idle());
    const bool idle = systemIdle && cgroupIdle;
    if (idle != t.idle && announce) {
      spdlog::info("event={} cgroup={} source={} mode={} cgroup_busy_pct={:.3f}", idle ? "target_idle" : "target_busy",
                   t.label(), toString(t.gov.idleSource), toString(t.gov.mode), t.cpuVerdict.windowPercent);
    }
    if (!idle) t.period = PeriodState{};
    t.idle = idle;
  }
}

void Daemon::gradualTick(TimePoint now, const IdleVerdict& verdict) {
  if (!targets_) return;
  const bool rules = !policy_.rules.empty();
  if (targets_->all().empty() || (rules && now - targets_->lastWalk() >= kWalkPeriod)) refreshTargets(now);
  targets_->sampleCpu(now);
  judgeTargets();
  // Totals are read where no trigger can wake us, and while backing off (until resumed).
  for (Target& t : targets_->all()) {
    if (activeTarget(t)) ensureScope(t);
    if (!t.pressure) continue;
    if ((activeTarget(t) && t.pressure->eventFd() < 0) || t.pressure->backoff().active())
      samplePressure(*t.pressure, now);
  }
  std::uint64_t freed = 0;
  if (auto mem = readMeminfo(); mem && std::any_of(targets_->all().begin(), targets_->all().end(), activeTarget)) {
    measureTargets(*mem, now);
    std::vector<Share> shares = planPass(*mem);
    // About to write: the decomposition must be from this tick, so a cgroup created since the
    // last walk under a target with another rule is never reclaimed through its parent. Only
    // when there is something to write: at the floors, idle ticks cost no walk.
    if (!shares.empty() && rules && targets_->lastWalk() != now) {
      refreshTargets(now);
      judgeTargets();
      measureTargets(*mem, now);
      shares = planPass(*mem);
    }
    freed = executePass(shares);
  }
  // Compact after reclaim, and once on entering the machine's idle period so free memory the
  // work left behind forms blocks the host can take.
  const bool compactNow = freed >= policies::kMinRequestBytes || (verdict.idle() && !period_.compacted);
  if (policy_.reclaim.compact && caps_.compactMemory && compactNow && !stop_ && !stopRequested()) compact();
}

void Daemon::measureTargets(const proc::Meminfo& mem, TimePoint now) {
  const bool rootActive = std::any_of(targets_->all().begin(), targets_->all().end(),
                                      [](const Target& t) { return t.isRoot() && activeTarget(t); });
  machineRefaults_ = rootActive && policy_.pressure.enabled ? readMachineRefaults().value_or(0) : 0;
  for (Target& t : targets_->all()) {
    t.measured.reset();
    if (!activeTarget(t)) continue;
    t.measured = targets_->measure(t, mem, machineRefaults_);
    checkRefaults(t, now);
  }
}

std::vector<Share> Daemon::planPass(const proc::Meminfo& mem) const {
  const PressureScope* machine = machinePressure_ ? &*machinePressure_ : nullptr;
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
  const auto& targets = targets_->all();
  std::vector<Candidate> candidates;
  for (std::size_t i = 0; i < targets.size(); ++i) {
    const Target& t = targets[i];
    if (!activeTarget(t) || !t.measured) continue;
    if (t.pressure && t.pressure->backoff().active()) continue;
    const std::uint64_t reclaimable = t.measured->first;
    if (t.period.stalledAt && reclaimable < *t.period.stalledAt + policy_.reclaim.chunk) continue;
    const double scale = machineScale * (t.pressure ? t.pressure->backoff().scale() : 1.0);
    candidates.push_back(Candidate{static_cast<int>(i), reclaimable, t.floor(),
                                   scaled(policies::stepBytes(mem.memTotal, t.gov.steps), scale)});
  }
  return shareBudget(std::move(candidates), budget, policies::kMinRequestBytes);
}

std::uint64_t Daemon::executePass(const std::vector<Share>& shares) {
  std::uint64_t freedTotal = 0;
  nanoseconds left = kPassBudget;
  auto& targets = targets_->all();
  for (const Share& share : shares) {
    if (stop_ || stopRequested() || left <= 0ns) break;
    Target& t = targets[static_cast<std::size_t>(share.target)];
    if (!t.measured || pressureStops(t)) continue;
    const std::int64_t freed = reclaimTarget(t, share.bytes, t.measured->first, left);
    if (freed > 0) freedTotal += static_cast<std::uint64_t>(freed);
    if (mode_.mode != policies::Mode::Gradual) break;  // a re-probe changed the mode
  }
  return freedTotal;
}

std::int64_t Daemon::reclaimTarget(Target& t, std::uint64_t bytes, std::uint64_t known, nanoseconds& budget) {
  const std::string rule = t.gov.rule < 0 ? "machine" : std::to_string(t.gov.rule + 1);
  if (options_.dryRun) {
    spdlog::info("event=reclaim_step cgroup={} rule={} dry_run=true asked_mib={} reclaimable_mib={} floor_mib={}",
                 t.label(), rule, formatMiB(bytes), formatMiB(known), formatMiB(t.floor()));
    t.period.stalledAt = known;  // a dry run frees nothing: do not repeat each tick
    return 0;
  }
  auto file = t.cgroup ? t.cgroup->reclaimFile() : Result<cgroup::ReclaimFile*>(errnoError(ENOENT, "cgroup gone"));
  if (!file) {
    if (!cgroup::cgroupGone(file.error())) {
      spdlog::error("event=reclaim_step cgroup={} error={}", t.label(), quoted(file.error().message()));
      t.period.stalledAt = known;
    }
    return 0;
  }
  const auto format = mode_.format;
  bool first = true;
  bool pressed = false;
  const StepOutcome step = runStep(
      StepLimits{bytes, t.floor(), policy_.reclaim.chunk, budget, overshoot_},
      [&]() -> std::optional<std::uint64_t> {
        if (std::exchange(first, false)) return known;  // measured this tick already
        if (!t.isRoot()) return targets_->reclaimable(t, proc::Meminfo{});
        auto now = readMeminfo();
        return now ? std::optional(now->reclaimable()) : std::nullopt;
      },
      [&](std::uint64_t chunk) {
        const cgroup::ReclaimWrite w = (*file)->write(chunk, format);
        ownStall_ += duration_cast<microseconds>(w.took);
        const double seconds = duration<double>(w.took).count();
        t.writeSeconds += seconds;
        writeSecondsTotal_ += seconds;
        return w;
      },
      // Between chunks: a signal, or pressure on the machine or this target, ends the step.
      [&] { return stopRequested() || (pressed = pressureStops(t)); },
      [&](std::uint64_t asked, const cgroup::ReclaimWrite& w, std::int64_t freed) {
        spdlog::debug("event=reclaim_chunk cgroup={} asked_mib={} freed_mib={} took_ms={:.1f} status={} errno={}",
                      t.label(), formatMiB(asked), formatMiBSigned(freed), toMs(w.took), toString(w.status), w.err);
      });
  overshoot_ = step.overshoot;
  budget -= step.took;  // the pass's time budget is shared by its shares
  ++t.steps;
  ++stepsTotal_;
  if (step.status == cgroup::ReclaimStatus::Partial) {
    ++t.partialSteps;
    ++partialTotal_;
  }
  if (step.freed() > 0) {
    t.reclaimedBytes += static_cast<std::uint64_t>(step.freed());
    reclaimedTotal_ += static_cast<std::uint64_t>(step.freed());
  }
  noteAction("reclaimed " + formatMiBSigned(step.freed()) + " MiB from " + t.label());
  t.lastAction = lastAction_;
  if (!pressed && step.freed() > 0) {
    // A step without pressure: the backoff's halving is undone one step at a time.
    if (machinePressure_) machinePressure_->backoff().stepSucceeded();
    if (t.pressure) t.pressure->backoff().stepSucceeded();
  }
  // Watch the refaults that follow: a jump means the step cut into the working set.
  if (t.gov.pressure.enabled) {
    std::optional<std::uint64_t> refaults;
    if (t.isRoot())
      refaults = readMachineRefaults();
    else if (auto m = targets_->measure(t, proc::Meminfo{}, machineRefaults_))
      refaults = m->second;
    if (refaults) t.refaults.stepEnded(clock_.now(), *refaults);
  }
  auto level = step.status == cgroup::ReclaimStatus::Failed ? spdlog::level::err : spdlog::level::info;
  spdlog::log(level,
              "event=reclaim_step cgroup={} rule={} asked_mib={} requested_mib={} freed_mib={} chunks={} "
              "took_ms={:.1f} end={}{} status={} errno={} reclaimable_before_mib={} reclaimable_after_mib={} "
              "floor_mib={}",
              t.label(), rule, formatMiB(bytes), formatMiB(step.requestedBytes), formatMiBSigned(step.freed()),
              step.chunks, toMs(step.took), toString(step.end), pressed ? " stopped_by=pressure" : "",
              toString(step.status), step.err, formatMiB(step.before), formatMiB(step.after), formatMiB(t.floor()));
  // Asked and (almost) nothing freed — EAGAIN, or cache regrowing as fast as it goes: pause
  // this target until its cache grows by a chunk, so it cannot hold the whole budget every
  // pass while other idle targets wait.
  if (step.requestedBytes >= policies::kMinRequestBytes &&
      step.freed() < static_cast<std::int64_t>(policies::kMinRequestBytes)) {
    t.period.stalledAt = step.after;
  }
  switch (step.status) {
    case cgroup::ReclaimStatus::Done:
    case cgroup::ReclaimStatus::Interrupted:
    case cgroup::ReclaimStatus::Partial: break;
    case cgroup::ReclaimStatus::Unsupported: {
      const EffectiveMode was = mode_;
      applyProbe("EINVAL from memory.reclaim");
      if (mode_ == was) {
        // The probe still believes in this format: do not send the kernel the same EINVAL
        // every tick. Without rules fall back to dropcache; with rules stop (drop_caches would
        // reach the cgroups they protect) until a reload or restart.
        const std::string why = "memory.reclaim rejected a request with EINVAL after a re-probe accepted its format";
        if (policy_.rules.empty()) {
          mode_ = chooseMode(policies::Mode::DropCache, caps_);
        } else {
          mode_ = EffectiveMode{};
          mode_.mode = policies::Mode::Disabled;
        }
        mode_.fellBack = true;
        mode_.reason = why;
        spdlog::warn("event=mode effective={} reason={}", toString(mode_.mode), quoted(why));
      }
      break;
    }
    case cgroup::ReclaimStatus::Gone: targets_->invalidate(); break;
    case cgroup::ReclaimStatus::Failed: t.period.stalledAt = step.after; break;
  }
  return step.freed();
}

}  // namespace reclaimd::controller

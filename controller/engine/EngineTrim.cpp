// Trimming: cold cache returned from targets that never go idle.
//
// A machine running an editor's language server, an agent's CLI or Docker's engine stays over the
// idle threshold around the clock, and the seed's reclaim never starts there. Its cache is mostly
// cold: files read by work that ended long ago. A busy target is therefore probed, as Meta's
// Senpai probes its fleet: every trim.interval a memory.reclaim request, never below the target's
// floor. The kernel takes the coldest pages first, so probes eat the cold cache and reach what
// the work reads last; that shows as refaults (pages read back from disk beyond the rate before
// the probe). How big each probe is and when refaults stop probing is the trimming law
// (TrimLaw.h); this file decides when a target is due a probe and says what trimming does. PSI
// pressure stops probes as it stops steps.
//
// A probe starts only when the target has been busy for a whole grace period and works in the
// current interval: a user who paused (past the interval's 10 s), or work that just ended, keeps a
// warm cache exactly as the seed promises (the grace before reclaim is unchanged for a machine
// that goes idle).
#include <algorithm>
#include <string>

#include <fmt/format.h>

#include "base/Quantities.h"
#include "controller/engine/Engine.h"
#include "policies/Step.h"

namespace reclaimd::controller {

using namespace std::chrono;

namespace {

bool busy(const IdleVerdict* v, double threshold) {
  if (!v) return false;
  return v->state == IdleState::Busy || (v->state == IdleState::Warmup && v->intervalPercent > threshold);
}

// Work goes on: the current interval is busy. (Not the last sample's span too: under TCG, lost
// ticks leave many 1 s spans of a 2 % background empty, and requiring both cut probes from 76
// to 48 in the never-idle VM test, short of its bound. So a probe may come within one interval
// after work ends: at most two, 1 % each.)
bool working(const IdleVerdict* v, double threshold) {
  return v && v->intervalPercent > threshold;
}

// Heavy work (a build, a test run, a copy) reads its own files as it goes: probes then take
// what it reads next and it reads it back from disk (the rebuild benchmark read 40-255 MiB back
// per ten rounds; the matrix's work 263 MiB of its 400), and on classic LRU they reach the hot
// set of whatever runs beside it. Trimming is for the load that never ends (an editor, a
// language server, Docker's engine: 0.3-5 % of one CPU; a reader of a 100 MiB hot set every
// second, 12 % of a vCPU under TCG), so it waits while the current interval is this many times
// the idle threshold: 20 % of the CPUs by default, a fifth of the machine. At half that, the
// reader every second counts as heavy and its cold cache stays 6-9 minutes after the work
// instead of 2-3.
constexpr double kHeavyWork = 40;

std::optional<double> heavy(const IdleVerdict* v, double threshold) {
  if (!v || v->intervalPercent <= kHeavyWork * threshold) return std::nullopt;
  return v->intervalPercent;
}

const char* refaultedWhy(TrimLaw::StepAnswer answer) {
  switch (answer) {
    case TrimLaw::StepAnswer::Grown:
      return "what the last probes freed came back and the kernel activated it (it keeps it now): the next "
             "probe takes as much as the whole round did";
    case TrimLaw::StepAnswer::Kept:
      return "after rounds that grew, only part of the last round came back: the contact ended within it and the "
             "rest was cold; the next probe keeps its size";
    case TrimLaw::StepAnswer::Trickle:
      return "under an eighth of what the last probes freed came back: they take cold cache and met the edge of the "
             "work's; the step and the clean stretch go on";
    case TrimLaw::StepAnswer::NewWork:
      return "heavy work ran and more came back than the probes took since they last had nothing to take: the work "
             "ran again, reading its files back; its cache is judged afresh, from the smallest step";
    case TrimLaw::StepAnswer::Smallest:
      break;
  }
  return "refaults after a probe: the kernel is still learning what is hot; the next probes start again from the "
         "smallest step";
}

}  // namespace

void Engine::judgeTrim(TargetState& t, TimePoint now) {
  const IdleVerdict* sys = t.usesSystemCpu() ? &systemVerdict(t.gov.idle) : nullptr;
  const IdleVerdict* own = t.usesCgroupCpu() && t.cpuIdle ? &t.cpuVerdict : nullptr;
  const double threshold = t.gov.idle.thresholdPercent;
  if (t.inPeriod || !(busy(sys, threshold) || busy(own, threshold))) {
    if (t.trim.aim) unaim(t, now, "the target is idle: its steps take the whole", false);
    t.trim.busySince.reset();
    t.trim.working = false;
    t.trim.heavy.reset();
    t.trim.baselined = false;
    return;
  }
  if (!t.trim.busySince) t.trim.busySince = now;
  t.trim.working = working(sys, threshold) || working(own, threshold);
  const bool wasHeavy = t.trim.heavy.has_value();
  t.trim.heavy = heavy(sys, threshold);
  if (!t.trim.heavy) t.trim.heavy = heavy(own, threshold);
  if (!t.trim.heavy) return;
  t.trim.law.heavyWork(now);
  if (!wasHeavy) emit(Severity::Debug, "trim_paused").add("cgroup", t.label()).add("busy_pct", *t.trim.heavy, 1);
}

bool Engine::trimDue(const TargetState& t, TimePoint now) const {
  return t.gov.trim.enabled && t.gov.mode == policies::Mode::Gradual && !t.gone && !t.idle && t.trim.working &&
         !t.trim.heavy && t.trim.busySince && now - *t.trim.busySince >= t.gov.idle.grace && now >= t.trim.next &&
         !t.trim.settling && !t.trim.law.held(now);
}

// Where a probe of `t` stops: its floor, or the bottom its last hold showed while that holds.
std::uint64_t Engine::trimKeep(const TargetState& t, TimePoint now) const {
  const std::uint64_t refaulted = t.measured ? t.measured->refaults * caps_.pageBytes : 0;
  return std::max(t.floor(), t.trim.law.bottom(now, refaulted));
}

// What a probe could take at `reclaimable` over `keep`: nothing where its first chunk would ask
// less than a request asks at least (atFloor: a kernel that overshoots leaves the last megabytes
// above the floor unasked). The planner sends no probe there, and the law counts it as nothing
// above: no probe met those last megabytes.
std::uint64_t Engine::trimAbove(std::uint64_t reclaimable, std::uint64_t keep) const {
  return atFloor(reclaimable, keep) ? 0 : reclaimable - keep;
}

TrimLawSettings Engine::trimLaw(const TargetState& t) const {
  return TrimLawSettings{t.gov.trim.minStep, t.gov.trim.percent, policy_.reclaim.chunk, t.gov.idle.grace};
}

// Probes for the busy targets due one, after `used` bytes of the machine's room went to idle
// targets' steps. A target's first due turn only reads its refaults: a probe needs a rate before
// it to be judged by.
void Engine::planTrims(const proc::Meminfo& mem, TimePoint now, std::uint64_t used,
                       std::vector<PlannedShare>& out) const {
  if (pressure_.machine && pressure_.machine->backoff().active()) return;
  const std::uint64_t floor = policy_.reclaim.floor;
  std::uint64_t room = mem.reclaimable() > floor ? mem.reclaimable() - floor : 0;
  room -= std::min(room, used);
  for (const TargetState& t : targets_.all) {
    if (!trimDue(t, now) || !t.measured || !t.trim.baselined) continue;
    if (t.scope && t.scope->backoff().active()) continue;
    const std::uint64_t reclaimable = t.measured->reclaimable;
    const std::uint64_t keep = trimKeep(t, now);
    const std::uint64_t above = trimAbove(reclaimable, keep);
    if (above == 0) continue;
    std::uint64_t bytes = std::min(t.trim.law.size(above, trimLaw(t)), room);
    std::optional<CgroupKey> aim;
    if (const auto& a = t.trim.aim) {
      bytes = std::min(bytes, a->reclaimable - std::min(a->reclaimable, a->floor));
      aim = CgroupKey{a->path, a->inode};
    }
    // A probe that asks nothing is not a probe.
    if (bytes < policies::kMinRequestBytes) continue;
    room -= bytes;
    out.push_back(PlannedShare{t.id, bytes, reclaimable, true, keep, std::move(aim)});
  }
}

void Engine::scheduleTrims(TimePoint now) {
  for (TargetState& t : targets_.all) {
    if (!trimDue(t, now) || !t.measured) continue;
    const std::uint64_t above = trimAbove(t.measured->reclaimable, trimKeep(t, now));
    if (t.trim.baselined) t.trim.law.probed(now, above, trimLaw(t));
    else t.trim.law.start(now, above, trimLaw(t));
    // Started with the probes aimed at a quiet cgroup chosen before: their step doubles from the
    // first, as from the aim's start (TrimLaw::aimed). Not again after a hold: the aimed probes met
    // cache in use there (a busy neighbour's hot set charged to the quiet cgroup), and doubling
    // from the first would take it again.
    if (!t.trim.baselined && t.trim.aim && t.trim.law.holds() == 0) t.trim.law.aimed();
    if (!t.trim.baselined) {
      // At or under its floor no probe can follow: the start is not news at info.
      emit(above > 0 ? Severity::Info : Severity::Debug, "trim_started")
          .add("cgroup", t.label())
          .add("busy_for_s", duration<double>(now - *t.trim.busySince).count(), 0)
          .mib("reclaimable_mib", t.measured->reclaimable)
          .mib("floor_mib", t.floor())
          .add("every_s", duration<double>(t.gov.trim.interval).count(), 1);
    }
    t.trim.baselined = true;
    t.trim.next = now + t.gov.trim.interval;
  }
}

// Refaults jumped after a probe: no probe until they are in. A read that brings back what the
// probes took can take seconds (tens of MiB from a VM's disk), and a round judged at its first
// megabytes says a little came back of much: the next probes took more of the same hot set, and
// a hot set read once a minute came back at every read (158-244 MiB in 20 minutes, simulated,
// with reads over 2-8 s). They are in when a reading adds no more than the rate before the probe
// and a quarter of the guard's limit would (at the whole limit, a read of 1.4 MiB a second
// passed for done), or after half a grace, which no read lasts.
void Engine::settleTrim(TargetState& t, TimePoint now) {
  if (!t.trim.settling) return;
  TrimState::Settling& s = *t.trim.settling;
  const std::uint64_t refaults = t.measured->refaults;
  const double seconds = duration<double>(now - s.at).count();
  const double slack = static_cast<double>(refaultConfigOf(t.gov, caps_.pageBytes).limitPages) / 4;
  const double usual = s.jump.rateBefore * seconds + slack;
  const bool coming = refaults >= s.refaults && static_cast<double>(refaults - s.refaults) > usual;
  if (coming && now - s.since < t.gov.idle.grace / 2) {
    s.at = now;
    s.refaults = refaults;
    return;
  }
  // The round's refaults are not the work's usual rate: the next probe is judged by the one before.
  t.refaults.skip(now, refaults);
  const RefaultJump jump = s.jump;
  t.trim.settling.reset();
  holdTrim(t, jump, now);
}

// Refaults jumped after a probe: the probe reached cache the work uses. Once, the kernel is
// still learning what is hot; recurring, the probes are at the bottom and probing holds.
void Engine::holdTrim(TargetState& t, const RefaultJump& jump, TimePoint now) {
  const auto hold =
      t.trim.law.refaulted(now, t.measured->reclaimable,
                           ReadBack{t.measured->refaults * caps_.pageBytes, t.measured->activations * caps_.pageBytes},
                           trimLaw(t));
  if (!hold) {
    const TrimLaw::Round& round = t.trim.law.lastRound();
    emit(Severity::Info, "trim_refaulted")
        .add("cgroup", t.label())
        .mib("reclaimable_mib", t.measured->reclaimable)
        .mib("next_probe_mib", t.trim.law.step())
        .add("reason", refaultedWhy(t.trim.law.lastAnswer()))
        .mib("round_freed_mib", round.freed)
        .mib("came_back_mib", round.came)
        .mib("activated_mib", round.activated)
        .add("excess_pages", jump.excessPages)
        .add("rate_before_pps", jump.rateBefore, 1)
        .add("rate_after_pps", jump.rateAfter, 1);
    return;
  }
  t.trim.baselined = false;  // after the hold, a fresh rate to judge the next probe by
  ++counters_.trimHolds;
  emit(Severity::Info, "trim_held")
      .add("cgroup", t.label())
      .mib("held_mib", t.measured->reclaimable)
      .add("for_s", duration<double>(*hold).count(), 0)
      .add("holds", t.trim.law.holds())
      .add("reason", trimKeep(t, now) > t.floor()
                         ? "half of what the probes freed came back from disk: what is left is the work's; no probe "
                           "until the hold ends, and none below this level for 30 minutes"
                         : "half of what the probes freed came back from disk: no probe until the hold ends; high "
                           "above the floor this may be a first contact, so the probes test below this level again "
                           "after it")
      .add("excess_pages", jump.excessPages)
      .add("rate_before_pps", jump.rateBefore, 1)
      .add("rate_after_pps", jump.rateAfter, 1);
}

// What trimming does with `t` now, for status and the metrics: the probe's size and why, or
// the hold, its end and why; and the cold estimate: what lies above the floor, or above the
// level where refaults last recurred (the work's cache, as far as the probes have shown).
void Engine::fillTrim(TargetStatus& ts, const TargetState& t, TimePoint now, double unixNow,
                      const std::function<std::string(TimePoint)>& when) const {
  const TrimLaw& law = t.trim.law;
  const bool held = law.held(now);
  if (!t.gov.trim.enabled || t.idle || t.gov.mode != policies::Mode::Gradual) return;
  // Heavy work past a grace: what a probe would do now is not measured (targets are measured
  // only while they may be written to), so status says why it waits and nothing more.
  if (!held && t.trim.heavy && t.trim.busySince && now - *t.trim.busySince >= t.gov.idle.grace) {
    ts.trim = "paused";
    ts.trimWhy = fmt::format("work at {:.1f}% of the CPUs is using its cache: probes wait until it is light again",
                             *t.trim.heavy);
    return;
  }
  if (!t.measured || !(held || t.trim.baselined)) return;
  const std::uint64_t keep = trimKeep(t, now);
  const std::uint64_t level = std::max(keep, law.heldLevel());
  const std::uint64_t reclaimable = t.measured->reclaimable;
  ts.trimColdBytes = reclaimable > level ? reclaimable - level : 0;
  const std::uint64_t above = trimAbove(reclaimable, keep);
  ts.trimProbeBytes = law.size(above, trimLaw(t));
  const auto since = duration_cast<seconds>(now - law.cleanSince());
  // The last refault's answer explains the probes' size until a clean stretch passes without another.
  const bool recent = since < cleanStretch(trimLaw(t));
  if (held) {
    ts.trim = "held";
    ts.trimHeldUntil = unixNow + duration<double>(law.heldUntil() - now).count();
    ts.trimHeldUntilText = when(law.heldUntil());
    ts.trimWhy = "half of what the probes freed came back from disk at " + formatBytes(law.heldLevel()) +
                 ": what is left is the work's (hold " + std::to_string(law.holds()) + " in a row)";
    return;
  }
  ts.trim = "probing";
  ts.trimWhy = trimmingWhy(t, keep, above, when, since, recent);
  // With nothing above the target's floor no probe goes anywhere, the aim's cgroup included.
  if (!t.trim.aim || ts.trimProbeBytes == 0) return;
  ts.trimAim = t.trim.aim->path;
  const bool judged = t.trim.settling || keep > t.floor();  // the why is not the step's
  const std::string why = judged ? ts.trimWhy : "the step doubles each probe: no reader of its own to learn from";
  ts.trimWhy = "probes go to " + t.trim.aim->path + ", quiet since the last scan, not to the busy cgroups' cache; ";
  ts.trimWhy += why;
}

// Why probes are the size they are, with `above` bytes over `keep` for them to ask.
std::string Engine::trimmingWhy(const TargetState& t, std::uint64_t keep, std::uint64_t above,
                                const std::function<std::string(TimePoint)>& when, seconds since, bool recent) const {
  const TrimLaw& law = t.trim.law;
  const std::string so = " (" + std::to_string(since.count()) + " s so far)";
  if (t.trim.settling)
    return "refaults are coming in after a probe: the next waits until they are in, to judge the whole round";
  if (keep > t.floor())
    return "probes take only what lies above " + formatBytes(keep) +
           ", where the work's reads showed its cache, until " + when(law.bottomUntil()) +
           "; then they test below it again";
  if (above == 0)
    return "nothing above the floor that a probe could ask: probes go on when the cache grows past it";
  if (!recent) return "no refault for " + std::to_string(since.count()) + " s: the step doubles each probe";
  switch (law.lastAnswer()) {
    case TrimLaw::StepAnswer::Grown:
      return "what came back of the last probes the kernel activated (it keeps it now): the probes stay large to get "
             "past it";
    case TrimLaw::StepAnswer::Kept:
      return "the probes met the end of the work's cache within their last round and the rest was cold: they keep "
             "their size";
    case TrimLaw::StepAnswer::Trickle:
      return "the last refault brought back under an eighth of what the probes freed: they take cold cache; the step "
             "doubles once half a grace passes without more" +
             so;
    case TrimLaw::StepAnswer::NewWork:
      return "the work ran again: its cache is judged afresh, with small probes until half a grace passes without "
             "refaults" +
             so;
    case TrimLaw::StepAnswer::Smallest: break;
  }
  return "small probes until half a grace passes without refaults" + so;
}

// What trimming says at info: one summary per target every kTrimSummaryEvery instead of a line
// per probe (those are at debug).
void Engine::summarizeTrims(TimePoint now) {
  std::erase_if(said_.trimSummaries, [&](const auto& entry) { return find(entry.first) == nullptr; });
  for (const TargetState& t : targets_.all) {
    auto [it, fresh] = said_.trimSummaries.try_emplace(t.id, TrimSummary{now, t.trim.probes, t.trim.bytes});
    TrimSummary& last = it->second;
    if (fresh || now - last.at < kTrimSummaryEvery) continue;
    if (t.trim.probes > last.probes) {
      emit(Severity::Info, "trim_summary")
          .add("cgroup", t.label())
          .add("rule", ruleLabel(t))
          .add("over_s", duration<double>(now - last.at).count(), 0)
          .add("probes", t.trim.probes - last.probes)
          .mib("freed_mib", t.trim.bytes - std::min(t.trim.bytes, last.bytes))
          .mib("freed_total_mib", t.trim.bytes)
          .mib("reclaimable_mib", t.lastReclaimable)
          .mib("floor_mib", t.floor());
    }
    last = TrimSummary{now, t.trim.probes, t.trim.bytes};
  }
}

}  // namespace reclaimd::controller

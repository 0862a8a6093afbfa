// Aiming: a busy target's probes written to the cgroup inside it whose work has ended.
//
// A target the machine-wide settings govern (the root, without rules) is probed as a whole, and the
// kernel spreads a probe of the whole over every cgroup below in proportion to its size: the busy
// ones' hot sets too. Where the work that left the cold cache ran in a cgroup of its own (a build's
// scope, a finished job's slice) and a light load goes on beside it (an editor's service), that hot
// set is what the probes meet that the machine still uses: in the never-idle matrix on 6.1, with
// the background process in a sibling cgroup, probes of the root read 33-40 MiB of its hot set back
// and stalled it 37-122 ms. Such a cgroup becomes a unit target a grace after its work
// (EngineUnits.cpp); until then, from the first scan that finds it quiet since the scan before (a
// quarter grace), the target's probes are written to it instead (0.8-2.5 MiB read back, 0-8.2 ms).
// The law (TrimLaw.h) still sizes them from the target's figures and judges them by the target's
// refaults, but their step doubles from the first probe (TrimLaw::aimed); each is capped at what
// the cgroup holds above its floor. Of such cgroups, the one with the most cache above its floor is
// taken (at least kUnitExcess), and kept while it stays quiet. Probes go back to the whole when it
// is at its floor, works again, goes, becomes a unit target, or gives next to nothing back (its
// cache locked or under writeback: not aimed at again until it holds a chunk more; one taken to its
// floor is not aimed at again while quiet: TrimState::drained). They start again from the first
// step: the whole holds the busy cgroups' hot sets, and a step grown on cold cache would take a
// large piece of them at once; and where the cgroup's cache went, the first round that brings
// anything back marks the bottom (TrimLaw::aimDrained). An aimed probe is measured on the target,
// as any: a cgroup whose probe freed a chunk while the rest of the target grew as much looks like
// one that gave nothing, and is left to its grace.
#include <algorithm>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include "controller/engine/Engine.h"
#include "controller/engine/MachineTargets.h"
#include "policies/Step.h"

namespace reclaimd::controller {

using namespace std::chrono;

// After a new scan: the cgroups quiet since the scan before, the highest of each subtree, inside
// a busy machine target that trims, and not taken as units.
std::vector<UnitPick> Engine::aimCandidates() const {
  return quietInBusyTargets(idle_.busy.scanEvery(), [&](const TargetState& around, std::string_view path) {
    return around.gov.trim.enabled && std::none_of(targets_.all.begin(), targets_.all.end(), [&](const TargetState& t) {
             return t.unit && within(path, t.path);
           });
  });
}

// After a new scan, with the candidates' memory.stat: a target aiming goes on at its cgroup while
// that stays quiet (to its floor: measureAim()); one not aiming takes the candidate with the most
// cache above its floor, if that is kUnitExcess.
void Engine::chooseAims(TimePoint now, const Readings& readings) {
  const std::uint64_t floor = policy_.governance(-1, false).floor;
  std::unordered_map<std::uint32_t, TrimState::Aim> best;
  std::unordered_map<std::uint32_t, TrimState::Aim> still;  // the current aim, quiet and read
  std::unordered_set<std::uint32_t> drainedQuiet;           // targets whose drained aim is still quiet
  for (const UnitPick& u : turn_.tick->aimPicks) {
    const TargetState* t = target(u.within);
    if (t && t->trim.drained && t->trim.drained->is(u.quiet.path, u.quiet.inode)) {
      drainedQuiet.insert(u.within);
      continue;
    }
    const Result<MemoryReading>* m = readings.memoryOf(CgroupRef{u.quiet.path, u.quiet.inode});
    // Taken as a unit this turn, or gone or unreadable (the next scan sees).
    if (unitAt(u.quiet.path) || !m || !*m) continue;
    const TrimState::Aim aim{u.quiet.path, u.quiet.inode, (*m)->reclaimable, floor};
    if (t && t->trim.aim && t->trim.aim->is(aim.path, aim.inode))
      still.emplace(u.within, aim);
    if (aim.reclaimable < floor + kUnitExcess || refusedAim(u.within, u.quiet, aim.reclaimable)) continue;
    auto [it, fresh] = best.try_emplace(u.within, aim);
    if (!fresh && it->second.reclaimable < aim.reclaimable) it->second = aim;
  }
  for (TargetState& t : targets_.all) {
    if (t.unit || t.gone) continue;
    if (!drainedQuiet.count(t.id)) t.trim.drained.reset();  // it worked, went, or is a unit
    if (t.trim.aim) {
      if (const auto s = still.find(t.id); s != still.end())
        t.trim.aim = s->second;
      else if (unitAt(t.trim.aim->path))
        unaim(t, now, "quiet for a grace, it is a target of its own", true);
      else
        unaim(t, now, "it worked since the scan before, or went", false);
    }
    const auto it = best.find(t.id);
    if (t.trim.aim || it == best.end()) continue;
    t.trim.aim = it->second;
    t.trim.law.aimed();
    emit(Severity::Info, "trim_aimed")
        .add("cgroup", t.label())
        .add("at", it->second.path)
        .add("since_s", duration<double>(idle_.busy.scanEvery()).count(), 0)
        .mib("reclaimable_mib", it->second.reclaimable)
        .mib("floor_mib", it->second.floor);
  }
}

// An aimed probe ended: its cgroup went, refused the write, or freed next to nothing (its cache does
// not go: locked, under writeback), and the probes go back to the whole rather than wait on it. A
// refusal is judged by the kernel's answer, not by what the target measured: the rest of the target
// shrinking during the write would otherwise pass for what the write freed, and keep the aim.
void Engine::aimedStepEnded(TargetState& t, const StepOutcome& step, TimePoint now) {
  if (!t.trim.aim) return;
  if (step.status() == cgroup::ReclaimStatus::Gone) return unaim(t, now, "it went", false);
  if (step.status() == cgroup::ReclaimStatus::Failed) {
    t.trim.refused = t.trim.aim;
    return unaim(t, now, "its memory.reclaim refused a probe: " + step.result.error().message(), false);
  }
  // What the probe freed is unknown (the target could not be measured after it), or the kernel refused
  // the request's format (EINVAL: a re-probe follows): no verdict on the cgroup.
  if (step.end == StepEnd::Unmeasured || step.status() == cgroup::ReclaimStatus::Unsupported) return;
  const auto least = static_cast<std::int64_t>(policies::kMinRequestBytes);
  if (step.requestedBytes < policies::kMinRequestBytes || step.freed() >= least) return;
  t.trim.refused = t.trim.aim;
  unaim(t, now, "a probe there freed next to nothing: its cache does not go", false);
}

// The cgroup a probe of target `id` freed next to nothing from, holding no chunk more since.
bool Engine::refusedAim(std::uint32_t id, const QuietCgroup& q, std::uint64_t reclaimable) const {
  const TargetState* t = target(id);
  if (!t || !t->trim.refused) return false;
  const TrimState::Aim& r = *t->trim.refused;
  // Less than a chunk more than when it refused, without the sum (a memory.stat near 2^64 wraps it).
  return r.is(q.path, q.inode) && (reclaimable < r.reclaimable || reclaimable - r.reclaimable < policy_.reclaim.chunk);
}

bool Engine::unitAt(std::string_view path) const {
  return std::any_of(targets_.all.begin(), targets_.all.end(),
                     [&](const TargetState& t) { return t.unit && t.path == path; });
}

// Each turn the target is measured: its aim's cache with it. At its floor, or unreadable (gone),
// probes go back to the whole.
void Engine::measureAim(TargetState& t, TimePoint now, const Readings& readings) {
  if (!t.trim.aim) return;
  TrimState::Aim& aim = *t.trim.aim;
  const Result<MemoryReading>* m = readings.memoryOf(CgroupRef{aim.path, aim.inode});
  if (!m) return;  // not asked this turn
  if (!*m) return unaim(t, now, "its memory.stat could not be read: " + m->error().message(), false);
  aim.reclaimable = (*m)->reclaimable;
  if (!atFloor(aim.reclaimable, aim.floor)) return;
  t.trim.drained = aim;
  unaim(t, now, "it is at its floor", true);
}

// Probes go back to the whole, from the smallest step (judged by the same refaults: the
// target's, which the aimed probes were judged by too). `drained`: the cgroup's cache went (to its
// floor, or it is a unit now, whose steps take it there): what is left to the whole is the busy
// cgroups' cache, and the next refault marks the bottom (TrimLaw::aimDrained).
void Engine::unaim(TargetState& t, TimePoint now, const std::string& why, bool drained) {
  emit(Severity::Info, "trim_unaimed").add("cgroup", t.label()).add("at", t.trim.aim->path).add("reason", why);
  t.trim.aim.reset();
  const std::uint64_t keep = trimKeep(t, now);
  const std::uint64_t above = trimAbove(t.lastReclaimable, keep);
  if (drained)
    t.trim.law.aimDrained(now, above, trimLaw(t));
  else
    t.trim.law.start(now, above, trimLaw(t));
}

}  // namespace reclaimd::controller

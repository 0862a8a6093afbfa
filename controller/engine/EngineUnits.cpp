// Units: cgroups judged by their own CPU where no rule governs them.
//
// Without rules the machine is one target, judged by the machine's CPU, so a finished build's
// scope keeps its cache for as long as an editor's service keeps the machine over the threshold.
// The tree already says whose work that was: a unit's cpu.stat counts its whole subtree. So the
// scans that name the cgroups keeping the machine busy (BusyCgroups.h: every kBusyScanEvery while
// the machine is not idle) also find the units that used at most the idle threshold of one CPU
// over a whole grace period. Each such unit, inside a target the machine-wide settings govern and
// holding kUnitExcess above reclaim.cgroup_floor, becomes a target of its own for as long as it
// stays quiet: its cache goes to that floor in the machine's steps, with the same pressure and
// refault guards, while the target around it is trimmed as before. Only the highest quiet unit of
// a subtree is taken (user@1000.service quiet as a whole is one target, not one per app), and a
// unit's CPU is checked on every turn it is a target: any work past the threshold drops it.
//
// Any cgroup is judged, not only systemd's units and scopes: slices and the plain cgroups of a
// machine without systemd (WSL) too. The target around a quiet cgroup can only be trimmed by
// probes of the whole, and the kernel spreads those over every cgroup below in proportion to its
// size, the busy ones' hot sets included: measured in the never-idle matrix with the work and the
// background process in sibling cgroups, 5 % of the hot set a minute read back from disk on 6.1
// and 1.4 s of the background's stall. Taking the quiet cgroup itself touches none of that.
#include <algorithm>
#include <string_view>
#include <unordered_map>

#include "base/Quantities.h"
#include "controller/engine/Engine.h"
#include "controller/engine/MachineTargets.h"
#include "policies/Rules.h"

namespace reclaimd::controller {

using namespace std::chrono;

// After a new scan: the quiet units, the highest of each subtree, inside a busy machine target.
std::vector<UnitPick> Engine::quietUnits() const {
  return quietInBusyTargets(std::nullopt, [](const TargetState&, std::string_view) { return true; });
}

// The cgroups quiet over `over` (the grace when not given) by the busy scans, the highest of each
// subtree that `accept` takes (given the busy machine target around it), with that target.
std::vector<UnitPick> Engine::quietInBusyTargets(
    std::optional<nanoseconds> over, const std::function<bool(const TargetState&, std::string_view)>& accept) const {
  std::vector<UnitPick> out;
  if (!policy_.idle.units || mode_.mode != policies::Mode::Gradual) return out;
  std::string taken;  // the last cgroup taken: the scan is in pre-order, its subtree follows it
  bool any = false;
  const auto machine = machineTargets(targets_.all);
  auto belowRoot = [](std::string_view path) { return !path.empty(); };
  for (const QuietCgroup& q : idle_.busy.quiet(policy_.idle.thresholdPercent, belowRoot, over)) {
    if (any && within(q.path, taken)) continue;
    // reclaimd's own cgroup: its CPU is its work, not the cgroup's.
    if (!setup_.ownCgroup.empty() && within(setup_.ownCgroup, q.path)) continue;
    const int around = enclosing(q.path, machine);
    if (around < 0) continue;
    const TargetState& t = targets_.all[static_cast<std::size_t>(around)];
    if (t.active() || !accept(t, q.path)) continue;
    out.push_back(UnitPick{q, t.id});
    taken = q.path;
    any = true;
  }
  return out;
}

std::vector<UnitPick> Engine::judgeUnits() {
  targets_.unitsJudgedAt = idle_.busy.newestAt();
  const std::vector<UnitPick> quiet = quietUnits();
  std::unordered_map<std::string_view, const UnitPick*> byPath;
  for (const auto& u : quiet)
    byPath.emplace(u.quiet.path, &u);
  // Unit targets the scan no longer calls quiet worked since (or left): dropped.
  targets_.all.erase(std::remove_if(targets_.all.begin(), targets_.all.end(),
                                    [&](const TargetState& t) {
                                      if (!t.unit) return false;
                                      auto it = byPath.find(t.path);
                                      return it == byPath.end() || it->second->quiet.inode != t.inode;
                                    }),
                     targets_.all.end());
  for (TargetState& t : targets_.all) {
    if (!t.unit) continue;
    const QuietCgroup& q = byPath.at(t.path)->quiet;
    t.unit->usage = q.usage;
    t.unit->at = q.at;
    t.unit->percent = q.percent;
  }
  std::vector<UnitPick> take;
  for (const auto& u : quiet) {
    const bool held = std::any_of(targets_.all.begin(), targets_.all.end(),
                                  [&](const TargetState& t) { return t.unit && t.path == u.quiet.path; });
    if (!held) take.push_back(u);
  }
  // Where a unit last rested is remembered only while it stays quiet.
  for (auto it = targets_.unitRest.begin(); it != targets_.unitRest.end();)
    it = byPath.count(it->first) ? std::next(it) : targets_.unitRest.erase(it);
  return take;
}

policies::Governance Engine::unitGovernance() const {
  policies::Governance gov = policy_.governance(-1, false);
  gov.idleSource = policies::IdleSource::Cgroup;
  gov.trim.enabled = false;  // the target around it trims
  return gov;
}

// A quiet unit becomes a target when its cache is worth a step: kUnitExcess above its floor and
// above the level it was last left at.
bool Engine::adoptUnit(const UnitPick& u, TimePoint now, const Result<MemoryReading>& m) {
  if (!m) return false;  // gone, or unreadable: ignoring it, the next scan sees
  const policies::Governance gov = unitGovernance();
  const auto rest = targets_.unitRest.find(u.quiet.path);
  const std::uint64_t from = rest != targets_.unitRest.end() && rest->second.inode == u.quiet.inode
                                 ? std::max(rest->second.bytes, gov.floor)
                                 : gov.floor;
  if (m->reclaimable < from + kUnitExcess) return false;
  TargetState t = newTarget(u.quiet.path, u.quiet.inode, gov, now);
  t.unit = UnitState{u.within, u.quiet.usage, u.quiet.at, u.quiet.percent};
  t.idle = t.inPeriod = true;
  t.lastReclaimable = m->reclaimable;
  emit(Severity::Info, "unit_quiet")
      .add("cgroup", t.label())
      .add("cpu_pct", u.quiet.percent, 3)
      .add("threshold_pct", policy_.idle.thresholdPercent, 3)
      .add("over_s", duration<double>(policy_.idle.grace).count(), 0)
      .mib("reclaimable_mib", m->reclaimable)
      .mib("floor_mib", gov.floor);
  targets_.all.push_back(std::move(t));
  ++counters_.unitsTaken;
  return true;
}

// On every turn a unit is a target: work past the threshold since it was judged quiet (over at
// least the current interval's span) ends it, as the machine's current interval would.
void Engine::checkUnitCpu(TargetState& t, TimePoint now, const Result<nanoseconds>& usage) {
  if (!usage) {
    readFailed(t, usage.error());
    return;
  }
  const nanoseconds span = std::max<nanoseconds>(now - t.unit->at, policy_.idle.interval);
  const double allowed = policy_.idle.thresholdPercent / 100.0 * duration<double>(span).count();
  const double used = duration<double>(*usage - std::min(*usage, t.unit->usage)).count();
  if (used <= allowed) return;
  emit(Severity::Info, "unit_busy")
      .add("cgroup", t.label())
      .add("cpu_ms", used * 1000, 0)
      .add("since_s", duration<double>(now - t.unit->at).count(), 0);
  t.unit->busy = true;  // pruneUnits() drops it
  t.idle = false;
}

namespace {

// Where a unit target stands after this turn's measurement.
enum class UnitEnd { Keep, Drop, Rest };

// `atFloor`: measured, and too close to its floor for a step (Engine::atFloor).
UnitEnd unitEnd(const TargetState& t, bool aroundBusy, bool atFloor) {
  if (t.gone || t.unit->busy || !aroundBusy) return UnitEnd::Drop;
  if (t.watched() || (t.scope && t.scope->backoff().active())) return UnitEnd::Keep;
  return atFloor || t.period.stalledAt ? UnitEnd::Rest : UnitEnd::Keep;
}

}  // namespace

// Units done with: at their floor (or stalled there) with no refault watch or backoff pending
// (at rest: remembered), gone, found busy, or inside a target reclaimed as a whole now (idle).
void Engine::pruneUnits() {
  // Whether each enclosing target is still busy, read before any element moves.
  std::unordered_map<std::uint32_t, bool> busyAround;
  for (const TargetState& t : targets_.all) {
    if (!t.unit) busyAround.emplace(t.id, !t.active() && !t.gone);
  }
  auto done = [&](const TargetState& t) {
    if (!t.unit) return false;
    const auto around = busyAround.find(t.unit->within);
    const bool floored = t.measured && atFloor(t.measured->reclaimable, t.floor());
    switch (unitEnd(t, around != busyAround.end() && around->second, floored)) {
      case UnitEnd::Keep: return false;
      case UnitEnd::Drop: return true;
      case UnitEnd::Rest: targets_.unitRest[t.path] = UnitRest{t.inode, t.lastReclaimable}; return true;
    }
    return true;
  };
  targets_.all.erase(std::remove_if(targets_.all.begin(), targets_.all.end(), done), targets_.all.end());
}

// After a walk: a unit target stays while a target the machine governs still encloses it (and no
// rule made the unit a target of its own), under the settings of the policy now (a reload walks
// again: its floor binds the units already taken as it binds those taken after it).
void Engine::carryUnits(std::vector<TargetState>& next) {
  if (!policy_.idle.units) return;
  // The walk's targets by path (views into `next`: nothing is added to it until they are done).
  const auto machine = machineTargets(next);
  std::unordered_map<std::string_view, bool> walked;
  for (const TargetState& n : next)
    walked.emplace(n.path, true);
  std::vector<TargetState> carried;
  for (TargetState& t : targets_.all) {
    if (!t.unit || t.gone || t.unit->busy || walked.count(t.path)) continue;
    const int around = enclosing(t.path, machine);
    if (around < 0) continue;
    t.unit->within = next[static_cast<std::size_t>(around)].id;
    t.gov = unitGovernance();
    t.refaults.reconfigure(refaultConfigOf(t.gov, caps_.pageBytes));
    carried.push_back(std::move(t));
  }
  for (TargetState& t : carried)
    next.push_back(std::move(t));
}

}  // namespace reclaimd::controller

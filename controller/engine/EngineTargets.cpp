// The engine's targets: the walk and what survives it, each target's own CPU, judging them
// idle, and measuring their cache.
#include <algorithm>
#include <string_view>
#include <unordered_map>

#include "cgroup/ReclaimTypes.h"
#include "controller/engine/Decompose.h"
#include "controller/engine/Engine.h"
#include "policies/Rules.h"

namespace reclaimd::controller {

// At least one page: the smallest limit (4 KiB) is less than a 16 or 64 KiB page, and a limit of
// none would take any page read back for the working set.
RefaultConfig refaultConfigOf(const policies::Governance& gov, std::uint64_t pageBytes) {
  return RefaultConfig{gov.pressure.refaultWindow, std::max<std::uint64_t>(1, gov.pressure.refaultLimit / pageBytes)};
}

TargetState* Engine::find(std::uint32_t id) {
  for (TargetState& t : targets_.all) {
    if (t.id == id) return &t;
  }
  return nullptr;
}

const TargetState* Engine::target(std::uint32_t id) const {
  return const_cast<Engine*>(this)->find(id);
}

bool Engine::walkDue(TimePoint now) const {
  return !targets_.lastWalk || (!policy_.rules.empty() && now - *targets_.lastWalk >= kWalkPeriod);
}

Reads Engine::treeReads() const {
  Reads r;
  r.tree = true;
  r.descend = descend();
  return r;
}

cgroup::Descend Engine::descend() const {
  return [this](std::string_view path) { return policies::mayMatchBelow(policy_.rules, path); };
}

bool Engine::walk(TimePoint now, const std::function<Result<cgroup::Tree>()>& readTree) {
  std::vector<TargetState> next;
  // Old state by path (copied: the old targets are moved from), so carrying it over is a lookup,
  // not a scan of thousands of targets per target.
  std::unordered_map<std::string, std::size_t> old;
  old.reserve(targets_.all.size());
  for (std::size_t i = 0; i < targets_.all.size(); ++i)
    old.emplace(targets_.all[i].path, i);
  Event stats(Severity::Debug, "walk");
  if (policy_.rules.empty()) {
    // One target, the root, measured machine-wide: no walk at all.
    adopt(next, old, "", 0, policy_.governance(-1, true), now);
    stats.add("cgroups", 1);
  } else {
    const Result<cgroup::Tree> tree = readTree();
    if (!tree) {
      emit(Severity::Error, "walk_failed").add("error", tree.error().message());
      return false;
    }
    std::vector<int> ruleOf(tree->nodes.size());
    for (std::size_t i = 0; i < tree->nodes.size(); ++i) {
      // Pre-order: the parent's rule is known; a cgroup no rule matches inherits it.
      const int own = policies::governingRule(policy_.rules, tree->path(i));
      const int parent = tree->nodes[i].parent;
      ruleOf[i] = own >= 0 || parent < 0 ? own : ruleOf[static_cast<std::size_t>(parent)];
    }
    for (const TargetSpec& spec : decompose(*tree, ruleOf)) {
      const cgroup::TreeNode& node = tree->nodes[static_cast<std::size_t>(spec.node)];
      std::string path = tree->path(spec.node);
      const bool root = node.parent < 0;
      adopt(next, old, std::move(path), node.inode, policy_.governance(spec.rule, root), now);
    }
    const auto unlisted =
        std::count_if(tree->nodes.begin(), tree->nodes.end(), [](const cgroup::TreeNode& n) { return n.unlisted; });
    stats.add("cgroups", tree->nodes.size())
        .add("unlisted", unlisted)
        .add("vanished", tree->vanished)
        .add("symlinks_skipped", tree->symlinks);
    if (tree->incomplete > 0) {
      // Subtrees the walk could not read (out of fds, EACCES): nothing at or above them is
      // written until a walk sees them whole.
      emit(Severity::Warn, "walk_incomplete")
          .add("cut_nodes", tree->incomplete)
          .add("error", tree->incompleteError ? tree->incompleteError->message() : "too many cgroups");
    }
  }
  carryUnits(next);
  targets_.all = std::move(next);
  targets_.lastWalk = now;
  events_.push_back(std::move(stats.add("targets", targets_.all.size())));
  return true;
}

// Carries a target's state over when the same cgroup (path and inode) keeps the same rule. A rule
// is known by its match, not its place in the list: a reload that reorders the rules, or inserts
// one before the others, governs every cgroup as before. The same match with other settings (a
// floor, steps or idle settings edited) is the administrator tuning the rule that governs the
// cgroup: its state is kept and reconfigured below, as the refault guard and idle detector allow,
// and the settings apply from the next step. A cgroup that another rule governs now (one more
// specific was added, or its rule's match edited) starts afresh: what was learned about it, its
// holds and idle history, was learned under a rule that no longer has it.
void Engine::adopt(std::vector<TargetState>& next, const std::unordered_map<std::string, std::size_t>& old,
                   std::string path, std::uint64_t inode, policies::Governance gov, TimePoint now) {
  auto found = old.find(path);
  TargetState* same = found == old.end() ? nullptr : &targets_.all[found->second];
  if (same && !same->unit && same->inode == inode && same->gov.match == gov.match && !same->gone) {
    TargetState kept = std::move(*same);
    kept.gov = gov;  // a reload may have changed the rule's settings, or its place in the list
    if (kept.usesCgroupCpu() && !kept.cpuIdle) kept.cpuIdle.emplace(idleConfigOf(gov.idle));
    if (!kept.usesCgroupCpu()) kept.cpuIdle.reset();
    if (kept.cpuIdle) kept.cpuIdle->reconfigure(idleConfigOf(gov.idle));
    // Without the pressure guards refaults are not followed (the root's are not even read): a
    // probe's round still coming in would never be judged, and no probe would follow it; a step's
    // watch would never end, and keep the target measured on every tick.
    if (gov.pressure.enabled) {
      kept.refaults.reconfigure(refaultConfigOf(gov, caps_.pageBytes));
    } else {
      kept.trim.settling.reset();
      kept.refaults = RefaultGuard(refaultConfigOf(gov, caps_.pageBytes));
    }
    // The cgroup its probes aim at keeps the floor of the policy now, as chooseAims() would set it
    // at the next scan: probes come many times a scan, and double each time. Without units there is
    // no aim (the next scan would end it, after those probes).
    if (kept.trim.aim && !policy_.idle.units) unaim(kept, now, "idle.units is off", false);
    if (kept.trim.aim) kept.trim.aim->floor = policy_.governance(-1, false).floor;
    next.push_back(std::move(kept));
    return;
  }
  TargetState t = newTarget(std::move(path), inode, gov, now);
  if (t.usesCgroupCpu()) t.cpuIdle.emplace(idleConfigOf(gov.idle));
  next.push_back(std::move(t));
}

// A target the engine has not had: a fresh id (never the machine's scope's), refaults watched
// as its rule says.
TargetState Engine::newTarget(std::string path, std::uint64_t inode, const policies::Governance& gov, TimePoint now) {
  TargetState t;
  t.id = targets_.nextId++;
  if (targets_.nextId == kMachineScope) targets_.nextId = 1;
  t.path = std::move(path);
  t.inode = inode;
  t.gov = gov;
  t.firstSeen = now;
  t.refaults.reconfigure(refaultConfigOf(gov, caps_.pageBytes));
  return t;
}

void Engine::targetGone(TargetState& t) {
  if (t.gone) return;
  t.gone = true;
  t.measured.reset();
  targets_.lastWalk.reset();  // the next turn walks again
  emit(Severity::Debug, "cgroup_gone").add("cgroup", t.label());
}

// A cgroup file that could not be read: the cgroup left (quietly), or a warning (rate-limited by
// the shell's event log: a tree of thousands can fail together).
void Engine::readFailed(TargetState& t, const Error& error) {
  if (cgroup::cgroupGone(error)) {
    targetGone(t);
  } else if (cgroup::controllerMissing(error)) {
    unaccounted(t, error);
  } else {
    emit(Severity::Warn, "sample_skipped").add("cgroup", t.label()).add("error", error.message());
  }
}

// A cgroup without the memory controller is not gone: walking again would find it as it is.
// It is left out until the next periodic walk (which sees whether the controller came), and
// said once per cgroup, not once per turn.
void Engine::unaccounted(TargetState& t, const Error& error) {
  t.gone = true;
  t.measured.reset();
  if (said_.unaccounted.size() >= Said::kMaxUnaccounted) said_.unaccounted.clear();
  if (!said_.unaccounted.insert(t.path).second) return;
  emit(Severity::Warn, "cgroup_unaccounted").add("cgroup", t.label()).add("error", error.message());
}

void Engine::sampleCgroupCpu(TimePoint now, const Readings& readings) {
  for (TargetState& t : targets_.all) {
    // Each asked for before (gradualCgroups): one missing is taken as unreadable.
    if (t.unit && !t.gone) checkUnitCpu(t, now, readingOr(readings.cgroupCpuOf(t.ref()), "cpu.stat"));
    if (!t.cpuIdle || t.gone) continue;
    const Result<std::chrono::nanoseconds> usage = readingOr(readings.cgroupCpuOf(t.ref()), "cpu.stat");
    if (!usage) {
      readFailed(t, usage.error());
      continue;
    }
    // A share of one CPU: the total is wall time since the target was first seen.
    CpuSample s;
    s.at = now;
    s.busy = *usage;
    s.total = now - t.firstSeen;
    // reclaimd's own CPU, read after the cgroups' (a target holding reclaimd counts its work).
    if (within(setup_.ownCgroup, t.path)) s.own = readings.ownCpu.value_or(std::chrono::nanoseconds(0));
    t.cpuVerdict = t.cpuIdle->add(s);
  }
}

namespace {

// The state of an idle period that a Blocked tick (a burst in the current interval while the
// window stays quiet) keeps: only the window going busy, or a reset, ends the period.
bool keepsPeriod(const IdleVerdict& v) {
  return v.state == IdleState::Idle || v.state == IdleState::Blocked;
}

}  // namespace

void Engine::judgeTargets(TimePoint now) {
  const bool announce = !policy_.rules.empty();  // without rules the root mirrors the machine
  for (TargetState& t : targets_.all) {
    if (t.unit) {  // judged by the scans and checkUnitCpu()
      t.idle = t.inPeriod = !t.unit->busy;
      continue;
    }
    const IdleVerdict* sys = t.usesSystemCpu() ? &systemVerdict(t.gov.idle) : nullptr;
    const IdleVerdict* own = t.usesCgroupCpu() ? &t.cpuVerdict : nullptr;
    const bool idle = (!sys || sys->idle()) && (!own || (t.cpuIdle && own->idle()));
    const bool keep = (!sys || keepsPeriod(*sys)) && (!own || (t.cpuIdle && keepsPeriod(*own)));
    // A disabled target is never reclaimed: its idleness is nothing an administrator acts on.
    if (idle != t.idle && announce && t.gov.mode != policies::Mode::Disabled) {
      emit(Severity::Info, idle ? "target_idle" : "target_busy")
          .add("cgroup", t.label())
          .add("source", toString(t.gov.idleSource))
          .add("mode", toString(t.gov.mode))
          .add("cgroup_busy_pct", t.cpuVerdict.windowPercent, 3);
    }
    if (!keep) t.period = PeriodState{};
    t.idle = idle;
    t.inPeriod = keep;
    judgeTrim(t, now);
  }
}

bool Engine::measures(const TargetState& t, TimePoint now) const {
  return !t.gone && (t.active() || t.watched() || trimDue(t, now) || t.trim.law.held(now));
}

// The machine's refaults (/proc/vmstat) are read only when the root is measured: they keep its
// pre-step rate current and feed its refault watch.
bool Engine::rootMeasured(TimePoint now) const {
  return std::any_of(targets_.all.begin(), targets_.all.end(),
                     [&](const TargetState& t) { return t.isRoot() && t.gov.pressure.enabled && measures(t, now); });
}

void Engine::measureTargets(TimePoint now, const proc::Meminfo& mem, const Readings& readings) {
  pressure_.machineRefaults.reset();
  if (rootMeasured(now)) {
    // Unreadable, the root's refault check is skipped this turn, ignoring the error: its watch
    // and rate wait for the next reading.
    const Result<proc::Workingset> r = readingOr(readings.machineRefaults, "/proc/vmstat");
    if (r)
      pressure_.machineRefaults = *r;
    else
      sampleError(r.error(), now);
  }
  for (TargetState& t : targets_.all) {
    t.measured.reset();
    // A target whose step is being watched for refaults is measured even when it is no longer
    // idle: the work coming back is exactly what the watch is for.
    if (!measures(t, now)) continue;
    if (t.isRoot()) {
      // Unreadable refaults stand at 0 here and judge nothing: checkRefaults() is skipped.
      const proc::Workingset w = pressure_.machineRefaults.value_or(proc::Workingset{});
      t.measured = MemoryReading{mem.reclaimable(), w.refaults, w.activations};
      t.lastReclaimable = mem.reclaimable();
      measureAim(t, now, readings);
      if (pressure_.machineRefaults) {
        t.trim.law.observe(now, w.refaults * caps_.pageBytes);
        said_.refaultWaitEnded = false;
        settleTrim(t, now);
        checkRefaults(t, now);
      } else {
        lapseRefaultWaits(t, now);
      }
      continue;
    }
    const Result<MemoryReading> m = readingOr(readings.memoryOf(t.ref()), "memory.stat");
    if (!m) {
      readFailed(t, m.error());
      continue;
    }
    t.measured = *m;
    t.lastReclaimable = m->reclaimable;
    t.trim.law.observe(now, m->refaults * caps_.pageBytes);
    measureAim(t, now, readings);
    settleTrim(t, now);
    checkRefaults(t, now);
  }
}

}  // namespace reclaimd::controller

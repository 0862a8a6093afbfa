// The engine's one entry point: what happened comes in, the next command goes out.
#include <algorithm>

#include "controller/engine/Engine.h"

namespace reclaimd::controller {

using namespace std::chrono;

const char* commandName(const Command& command) {
  static constexpr const char* kNames[] = {"reclaim", "drop_caches", "compact", "reprobe", "watch", "unwatch"};
  return kNames[command.index()];
}

// A tick, top to bottom: the result of the command given last is taken in with the readings
// taken after it, then the pressure events that fired; a timer's input begins a turn (its CPU
// times judge idleness, and the verdict asks for what else the turn needs read); with those
// readings the turn is planned, phase by phase (the targets and their pressure totals, then their
// cache, then the pass); then come the turn's commands one at a time (tickCommand), each with the
// reads its result needs, then the scopes to watch or forget; when nothing is left to do or read
// the turn is over and the shell is told when to wake.
Output Engine::decide(const Input& input) {
  absorb(input);
  for (const ScopeEvent& e : input.pressure)
    pressureEvent(e, input.now);
  Output out;
  if (input.tick && !turn_.tick) out.read = beginTurn(input);
  // Each phase of planning takes what the one before asked for; one that asks for nothing is
  // followed by the next in the same decide.
  while (turn_.tick && turn_.tick->phase != TurnPhase::Planned && out.read.empty())
    out.read = planTurn(input);
  if (turn_.tick && turn_.tick->phase == TurnPhase::Planned) tickCommand(input, out);
  if (!asks(out)) out.command = watchCommand();
  if (!asks(out) && turn_.tick) {
    out.wake = turn_.tick->plan.wake;
    turn_.tick.reset();
  }
  turn_.pending = out.command;
  out.events = takeEvents();
  return out;
}

// dropcache: the drop, then the compaction after it. gradual: each share as a step of chunks,
// then the compaction a pass that freed memory asks for. A pending stop ends the turn before
// its next write or compaction.
bool Engine::tickCommand(const Input& input, Output& out) {
  Tick& k = *turn_.tick;
  if (k.plan.dropCache && !k.dropAsked) {
    // What a drop frees is the machine's cache before it less after it: meminfo first.
    if (!std::exchange(k.dropMeasuring, true)) {
      out.read.meminfo = true;
      return true;
    }
    k.dropAsked = true;
    const Result<proc::Meminfo> before = readingOr(input.readings.meminfo, "meminfo");
    if (setup_.dryRun) {
      wouldDrop(before, k.at);
      if (std::exchange(k.plan.compactAfterDrop, false)) wantsCompaction(0);  // says it, answers false
    } else {
      // Unreadable, the drop goes ahead, ignoring the error: only what it freed goes unsaid.
      if (before)
        k.dropBefore = before->reclaimable();
      else
        sampleError(before.error(), input.now);
      out.command = DropCaches{};
      out.read.meminfo = true;  // what the drop freed
      return true;
    }
  }
  if (k.plan.compactAfterDrop && !std::exchange(k.compactAsked, true) && !input.stop) {
    out.command = Compact{};
    return true;
  }
  if (!k.gradual) return false;
  if (nextChunk(input, out)) return true;
  if (!std::exchange(k.compactAsked, true) && wantsCompaction(k.freed) && !input.stop) {
    out.command = Compact{};
    return true;
  }
  return false;
}

// The pass: the next chunk of the share being written, or of the next share. Before each step
// and each chunk the machine's and the target's pressure totals are checked (read before the
// step, and after each chunk with its result): a backoff ends the step (the engine's own check,
// not the shell's). The pass's writes share kPassBudget.
bool Engine::nextChunk(const Input& input, Output& out) {
  Tick& k = *turn_.tick;
  while (k.share < k.plan.shares.size()) {
    const PlannedShare& share = k.plan.shares[k.share];
    if (!k.step) {
      if (mode_.mode != policies::Mode::Gradual || input.stop || k.left <= 0ns) {
        k.share = k.plan.shares.size();  // a re-probe changed the mode, a stop, or no time left
        return false;
      }
      if (!target(share.target)) {
        ++k.share;
        continue;
      }
      if (Reads before = stepReads(share); !input.readings.answer(before)) {
        out.read = std::move(before);  // read first; the next decide checks them
        return true;
      }
      if (pressureStops(share.target, input.now, input.readings)) {
        ++k.share;
        continue;
      }
      k.step.emplace(limitsFor(share, k.left), stepStart(share, input));
      k.pressed = false;
    }
    const auto ask = k.step->next(
        [&] { return input.stop || (k.pressed = pressureStops(share.target, input.now, input.readings)); });
    if (ask) {
      const TargetState& t = *target(share.target);
      const CgroupKey at = share.aim.value_or(CgroupKey{t.path, t.inode});
      out.command = ReclaimChunk{at.path, at.inode, *ask, mode_.format};
      out.read = chunkReads(t);
      return true;
    }
    if (endStep(input, out)) return true;
  }
  return false;
}

// A step is over: settle it; an EINVAL asks for the probe again.
bool Engine::endStep(const Input& input, Output& out) {
  Tick& k = *turn_.tick;
  const StepOutcome step = k.step->outcome();
  k.step.reset();
  const PlannedShare share = k.plan.shares[k.share++];
  k.left -= step.took;
  const bool reprobe = stepEnded(share, step, k.pressed, input.now, input.readings);
  if (step.freed() > 0) k.freed += static_cast<std::uint64_t>(step.freed());
  if (reprobe) out.command = Reprobe{};
  return reprobe;
}

// A step after another step of its pass that freed memory starts from its target measured
// again, not from the plan's figure: the machine's cache counts every cgroup's, and a step of
// the root reaches into every target's; a kernel that frees more than it is asked (6.1) can
// have taken the machine to its floor already.
bool Engine::remeasures(const PlannedShare& share) const {
  return turn_.tick->freed > 0 && target(share.target);
}

Reads Engine::stepReads(const PlannedShare& share) const {
  Reads r = pressureReads(share.target);
  if (remeasures(share)) addCacheRead(*target(share.target), r);
  return r;
}

std::optional<std::uint64_t> Engine::stepStart(const PlannedShare& share, const Input& input) {
  if (!remeasures(share)) return share.known;
  return cacheOf(*find(share.target), input);
}

void Engine::addCacheRead(const TargetState& t, Reads& r) const {
  if (t.isRoot())
    r.meminfo = true;
  else
    r.memory.push_back(CgroupKey{t.path, t.inode});
}

// Unreadable, nothing: a step that has no figure ends as unmeasured (its reclaim_step says
// end=unmeasured), so no chunk is sized from a figure it does not have.
std::optional<std::uint64_t> Engine::cacheOf(TargetState& t, const Input& input) {
  if (t.isRoot()) {
    const Result<proc::Meminfo> mem = readingOr(input.readings.meminfo, "meminfo");
    if (mem) return mem->reclaimable();
    sampleError(mem.error(), input.now);
  } else {
    const Result<MemoryReading> m = readingOr(input.readings.memoryOf(t.ref()), "memory.stat");
    if (m) return m->reclaimable;
    readFailed(t, m.error());
  }
  return std::nullopt;
}

Reads Engine::chunkReads(const TargetState& t) const {
  Reads r = pressureReads(t.id);
  addCacheRead(t, r);
  r.machineRefaults = t.isRoot() && t.gov.pressure.enabled;
  return r;
}

// The result of the command given last. One that does not answer it (a shell's mistake, or a
// recording edited by hand) is dropped: the command counts as not carried out.
void Engine::absorb(const Input& input) {
  const std::optional<Command> given = std::exchange(turn_.pending, std::nullopt);
  if (!given) return;
  if (const auto* w = std::get_if<Written>(&input.result); w && std::holds_alternative<ReclaimChunk>(*given)) {
    chunkResult(w->write, input);
  } else if (const auto* f = std::get_if<Finished>(&input.result); f && std::holds_alternative<DropCaches>(*given)) {
    const Result<proc::Meminfo> after = readingOr(input.readings.meminfo, "meminfo");
    if (!after) sampleError(after.error(), input.now);
    dropped(f->result, turn_.tick ? turn_.tick->dropBefore : std::nullopt,
            after ? std::optional(after->reclaimable()) : std::nullopt, f->took, input.now);
  } else if (f && std::holds_alternative<Compact>(*given)) {
    compacted(f->result, f->took, input.now);
  } else if (const auto* p = std::get_if<Probed>(&input.result); p && std::holds_alternative<Reprobe>(*given)) {
    reprobed(p->caps);
  } else if (const auto* h = std::get_if<Watched>(&input.result); h && std::holds_alternative<WatchScope>(*given)) {
    setFeed(std::get<WatchScope>(*given).id, h->how, h->why, h->gone);
  }
}

// A chunk was written: the target as measured after the write (the step sizes its next chunk
// from it).
void Engine::chunkResult(const cgroup::ReclaimWrite& write, const Input& input) {
  if (!turn_.tick || !turn_.tick->step) return;
  Tick& k = *turn_.tick;
  const std::uint32_t id = k.plan.shares[k.share].target;
  TargetState* t = find(id);
  const std::optional<std::uint64_t> measured = t ? cacheOf(*t, input) : std::nullopt;
  const std::uint64_t asked = k.step->asking();
  const std::int64_t freed = k.step->written(write, measured);
  chunkWritten(id, asked, write, freed, input.now);
}

// The scopes the shell watches follow the scopes the engine has: one that went (or was made
// anew by a reload, or changed its trigger) is forgotten, then each new one is watched. The
// changes are worked out once and handed out one at a time; one that a later event made moot
// is corrected by the next working-out, when these are done.
std::optional<Command> Engine::watchCommand() {
  if (pressure_.watchChanges.empty()) pressure_.watchChanges = watchChanges();
  while (!pressure_.watchChanges.empty()) {
    Command c = std::move(pressure_.watchChanges.front());
    pressure_.watchChanges.pop_front();
    if (const auto* u = std::get_if<UnwatchScope>(&c)) {
      if (pressure_.watched.erase(u->id)) return c;
      continue;
    }
    const auto& w = std::get<WatchScope>(c);
    if (pressure_.watched.emplace(w.id, Watching{w.path, w.inode, w.trigger, false}).second) return c;
  }
  return std::nullopt;
}

std::deque<Command> Engine::watchChanges() const {
  std::vector<ScopeView> want = scopes();
  std::sort(want.begin(), want.end(), [](const ScopeView& a, const ScopeView& b) { return a.id < b.id; });
  auto same = [](const Watching& w, const ScopeView& s) {
    return !w.stale && w.path == s.cgroupPath && w.inode == s.inode && w.trigger.stall == s.trigger.stall &&
           w.trigger.window == s.trigger.window;
  };
  std::deque<Command> changes;
  auto s = want.begin();
  for (const auto& [id, watching] : pressure_.watched) {  // both in id order
    while (s != want.end() && s->id < id) ++s;
    if (s == want.end() || s->id != id || !same(watching, *s)) changes.push_back(UnwatchScope{id});
  }
  for (const ScopeView& v : want) {
    auto it = pressure_.watched.find(v.id);
    if (it == pressure_.watched.end() || !same(it->second, v))
      changes.push_back(WatchScope{v.id, v.cgroupPath, v.inode, v.trigger});
  }
  return changes;
}

}  // namespace reclaimd::controller

// The turn's planning: the tick's CPU times judge idleness, and each phase after takes what the
// one before asked to read (TurnPhase, EngineState.h).
#include "controller/engine/Engine.h"

namespace reclaimd::controller {

using namespace std::chrono;

namespace {

Reads meminfoReads() {
  Reads r;
  r.meminfo = true;
  return r;
}

}  // namespace

Reads Engine::beginTurn(const Input& input) {
  Tick& k = turn_.tick.emplace();
  k.at = input.now;
  // Every tick carries the CPU times (tickReads()); a tick without them is a skipped sample too.
  const Result<CpuReading> cpu = readingOr(input.readings.cpu, "the CPU times");
  if (!cpu) {
    // A malformed sample is skipped; the windows keep their history.
    sampleError(cpu.error(), k.at);
    return {};
  }
  k.cpu = *cpu;
  observeCpu(CpuSample{k.at, cpu->busy, cpu->total, input.readings.ownCpu.value_or(0ns), cpu->cpus});
  k.asked.meminfo = idle_.verdict.periodStarted;  // what waits, said as the period starts
  if (mode_.mode == policies::Mode::Disabled) return k.asked;
  k.asked.scan = !idle_.verdict.idle() && idle_.busy.due(k.at);
  if (pressure_.machine && pressure_.machine->needsTotals() && pressure_.machine->readsTotals())
    k.asked.pressure.push_back(kMachineScope);
  if (pressure_.machine) resumeUnwatched(*pressure_.machine, k.at);
  if (mode_.mode == policies::Mode::Gradual && !policy_.rules.empty() && walkDue(k.at)) {
    const Reads tree = treeReads();
    k.asked.tree = tree.tree;
    k.asked.descend = tree.descend;
  }
  return k.asked;
}

// The plan of a turn, in the order its phases run. Each takes what the one before asked to read
// and names what the next needs read (ask); one that needs nothing more ends the plan. decide()
// calls this once per answer, and again at once when a phase asked for nothing.
Reads Engine::planTurn(const Input& input) {
  Tick& k = *turn_.tick;
  switch (k.phase) {
    case TurnPhase::Verdict:  // the busy scan, the machine's pressure total, the walk
      if (!k.cpu) return finishPlan();  // a skipped sample plans nothing
      takeVerdictReads(input);
      if (heldLineDue(k.at)) return ask(TurnPhase::HeldLine, meminfoReads());  // quoted in the line
      return planMode();
    case TurnPhase::HeldLine:  // why memory is held, said
      sayWhyHeld(k.at, readingOr(input.readings.meminfo, "meminfo"));
      return planMode();
    case TurnPhase::Cgroups:  // quiet units adopted, each target judged idle or not
      return ask(TurnPhase::TargetTotals, gradualTargets(input));
    case TurnPhase::TargetTotals: {  // backoffs: whether the pass has work
      Reads cache = gradualWork(input);
      return cache.empty() ? finishPlan() : ask(TurnPhase::Cache, std::move(cache));
    }
    case TurnPhase::Cache: {  // the targets measured, the pass planned
      Reads tree = gradualPass(input);
      return tree.empty() ? finishPlan() : ask(TurnPhase::Rewalk, std::move(tree));
    }
    case TurnPhase::Rewalk: {  // about to write: the tree again
      std::optional<Reads> cache = rewalked(input);
      return cache ? ask(TurnPhase::Remeasure, std::move(*cache)) : finishPlan();
    }
    case TurnPhase::Remeasure:  // the targets it found measured, the pass planned again
      remeasured(input);
      return finishPlan();
    case TurnPhase::Planned: break;
  }
  return {};
}

Reads Engine::ask(TurnPhase next, Reads reads) {
  Tick& k = *turn_.tick;
  k.phase = next;
  k.asked = std::move(reads);
  return k.asked;
}

void Engine::takeVerdictReads(const Input& input) {
  Tick& k = *turn_.tick;
  const TimePoint now = k.at;
  if (idle_.verdict.periodStarted) sayIdleEntered(now, readingOr(input.readings.meminfo, "meminfo"));
  if (k.asked.scan) {
    if (input.readings.scan && input.readings.scan->cgroups) {
      idle_.busy.add(now, k.cpu->total, input.readings.scan->ownCpu, *input.readings.scan->cgroups);
    } else {
      // No tree to scan (cgroup v1) or an unreadable root: no cgroup is named as keeping the
      // machine busy, ignoring the error (on v1 it is every scan's); the next try waits a period.
      idle_.busy.failed(now);
    }
  }
  if (!k.asked.pressure.empty() && pressure_.machine)
    takeTotal(*pressure_.machine, kMachineScope, now,
              readingOr(input.readings.pressureOf(kMachineScope), "the machine's pressure total"));
  // Without rules the walk reads nothing (the root is the one target). A walk that fell due after
  // the tree was asked for (a target left meanwhile) waits: the next turn walks, and the walk
  // again before a write comes first anyway.
  if (mode_.mode == policies::Mode::Gradual && walkDue(now) && (policy_.rules.empty() || k.asked.tree))
    walk(now, [&] { return readingOr(input.readings.tree, "the tree"); });
}

Reads Engine::planMode() {
  Tick& k = *turn_.tick;
  switch (mode_.mode) {
    case policies::Mode::Disabled: break;
    case policies::Mode::DropCache: dropCacheTurn(k.plan); break;
    case policies::Mode::Gradual: return ask(TurnPhase::Cgroups, gradualCgroups());
  }
  return finishPlan();
}

Reads Engine::finishPlan() {
  Tick& k = *turn_.tick;
  if (mode_.mode == policies::Mode::Gradual && k.cpu) summarizeTrims(k.at);
  k.plan.wake = nextWake(k.at);
  k.gradual = mode_.mode == policies::Mode::Gradual;
  k.phase = TurnPhase::Planned;
  return {};
}

}  // namespace reclaimd::controller

#include "controller/shell/Turn.h"

#include <algorithm>

namespace reclaimd::controller {

using namespace std::chrono;

namespace {

// Writes one share as a step of chunks (ReclaimStep.h), with the machine's and the target's
// pressure and a pending stop checked between chunks.
std::int64_t writeShare(Engine& engine, const PlannedShare& share, Sensors& in, Actuator& out, const Clock& clock,
                        nanoseconds& left) {
  const TargetState& t = *engine.target(share.target);
  const CgroupRef ref = t.ref();
  const bool root = t.isRoot();
  const cgroup::ReclaimFormat format = engine.mode().format;
  bool first = true;
  bool pressed = false;
  const StepOutcome step = runStep(
      engine.limitsFor(share, left),
      [&]() -> std::optional<std::uint64_t> {
        if (std::exchange(first, false)) return share.known;  // measured this turn already
        if (!root) {
          auto m = in.memory(ref);
          return m ? std::optional(m->reclaimable) : std::nullopt;
        }
        auto mem = in.meminfo();
        return mem ? std::optional(mem->reclaimable()) : std::nullopt;
      },
      [&](std::uint64_t bytes) { return out.reclaim(ref, bytes, format); },
      [&] {
        if (out.stopPending()) return true;
        const TimePoint now = clock.now();
        deliverPressureEvents(engine, in, out, now);
        return pressed = engine.pressureStops(share.target, now, in);
      },
      [&](std::uint64_t asked, const cgroup::ReclaimWrite& w, std::int64_t freed) {
        engine.chunkWritten(share.target, asked, w, freed, clock.now());
        out.publish(engine.takeEvents());
      });
  left -= step.took;  // the pass's time budget is shared by its shares
  const StepFollowUp follow = engine.stepEnded(share, step, pressed, clock.now(), in);
  if (follow.reprobe) engine.reprobed(out.reprobe());
  return step.freed();
}

std::uint64_t writeShares(Engine& engine, const Plan& plan, Sensors& in, Actuator& out, const Clock& clock) {
  std::uint64_t freed = 0;
  nanoseconds left = kPassBudget;
  for (const PlannedShare& share : plan.shares) {
    if (engine.mode().mode != policies::Mode::Gradual) break;  // a re-probe changed the mode
    if (out.stopPending() || left <= 0ns) break;
    const TimePoint now = clock.now();
    deliverPressureEvents(engine, in, out, now);
    if (!engine.target(share.target) || engine.pressureStops(share.target, now, in)) continue;
    const std::int64_t got = writeShare(engine, share, in, out, clock, left);
    if (got > 0) freed += static_cast<std::uint64_t>(got);
  }
  return freed;
}

void compact(Engine& engine, Actuator& out, const Clock& clock) {
  const TimePoint start = clock.now();
  const Result<void> done = out.compact();
  const TimePoint end = clock.now();
  engine.compacted(done, end - start, end);
}

void dropCaches(Engine& engine, const Plan& plan, Sensors& in, Actuator& out, const Clock& clock) {
  auto before = in.meminfo();
  const TimePoint start = clock.now();
  const Result<void> done = out.dropCaches();
  const TimePoint end = clock.now();
  auto after = in.meminfo();
  engine.dropped(done, before ? before->reclaimable() : 0, after ? std::optional(after->reclaimable()) : std::nullopt,
                 end - start, end);
  if (plan.compactAfterDrop && !out.stopPending()) compact(engine, out, clock);
}

}  // namespace

void deliverPressureEvents(Engine& engine, Sensors& in, Actuator& out, TimePoint now) {
  for (const ScopeEvent& e : out.pressureEvents())
    engine.pressureEvent(e.scope, e.gone, now, in);
}

Plan runTurn(Engine& engine, Sensors& in, Actuator& out, const Clock& clock, TimePoint now) {
  Plan plan = engine.turn(now, in);
  if (plan.dropCache) dropCaches(engine, plan, in, out, clock);
  if (engine.mode().mode == policies::Mode::Gradual) {
    const std::uint64_t freed = writeShares(engine, plan, in, out, clock);
    if (engine.wantsCompaction(freed) && !out.stopPending()) compact(engine, out, clock);
  }
  return plan;
}

}  // namespace reclaimd::controller

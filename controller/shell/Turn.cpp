#include "controller/shell/Turn.h"

#include "base/Overload.h"

namespace reclaimd::controller {

namespace {

Finished timed(const Clock& clock, const std::function<Result<void>()>& action) {
  const TimePoint start = clock.now();
  Result<void> done = action();
  return Finished{std::move(done), clock.now() - start};
}

}  // namespace

CommandResult carryOut(const Command& command, Actuator& out, const Clock& clock) {
  return std::visit(
      Overload{
          [&](const ReclaimChunk& c) -> CommandResult {
            return Written{out.reclaim(CgroupRef{c.path, c.inode}, c.bytes, c.format)};
          },
          [&](const DropCaches&) -> CommandResult { return timed(clock, [&] { return out.dropCaches(); }); },
          [&](const Compact&) -> CommandResult { return timed(clock, [&] { return out.compact(); }); },
          [&](const Reprobe&) -> CommandResult { return Probed{out.reprobe()}; },
          [&](const WatchScope& w) -> CommandResult { return out.watch(w); },
          [&](const UnwatchScope& u) -> CommandResult {
            out.unwatch(u.id);
            return Unwatched{};
          },
      },
      command);
}

Output drive(Engine& engine, Sensors& in, Actuator& out, const Clock& clock, Input input, DecideLog* log) {
  for (;;) {
    input.now = input.tick && input.now != TimePoint{} ? input.now : clock.now();
    input.pressure = out.pressureEvents();
    input.stop = out.stopPending();
    if (log) log->input(input);
    Output said = engine.decide(input, in);
    out.publish(std::move(said.events));
    if (!said.command) return said;
    if (log) log->did(*said.command);
    input = Input{};
    input.result = carryOut(*said.command, out, clock);
  }
}

TimePoint runTurn(Engine& engine, Sensors& in, Actuator& out, const Clock& clock, TimePoint now, DecideLog* log) {
  Input tick;
  tick.now = now;
  tick.tick = true;
  const Output last = drive(engine, in, out, clock, std::move(tick), log);
  return last.wake.value_or(now);
}

void betweenTurns(Engine& engine, Sensors& in, Actuator& out, const Clock& clock, DecideLog* log) {
  drive(engine, in, out, clock, Input{}, log);
}

}  // namespace reclaimd::controller

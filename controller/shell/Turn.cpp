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

Readings takeReadings(const Reads& reads, Sensors& in) {
  Readings got;
  if (reads.cpu) {
    got.cpu = in.cpu();
    got.ownCpu = in.ownCpu();
  }
  if (reads.meminfo) got.meminfo = in.meminfo();
  if (reads.machineRefaults) got.machineRefaults = in.machineRefaults();
  if (reads.tree) got.tree = in.tree(reads.descend);
  if (reads.scan) {
    Result<CgroupCpuScan> cgroups = in.cgroupCpuScan();
    got.scan = ScanRead{std::move(cgroups), in.ownCpu()};
  }
  for (const CgroupKey& c : reads.memory)
    got.memory.push_back(MemoryRead{c, in.memory(c.ref())});
  for (const CgroupKey& c : reads.cgroupCpu)
    got.cgroupCpu.push_back(CgroupCpuRead{c, in.cgroupCpu(c.ref())});
  if (!reads.cgroupCpu.empty()) got.ownCpu = in.ownCpu();  // after them: its share of theirs
  for (const ScopeId scope : reads.pressure)
    got.pressure.push_back(PressureRead{scope, in.pressureTotal(scope)});
  return got;
}

std::vector<ScopeEvent> takeEvents(Actuator& out, Sensors& in) {
  std::vector<ScopeEvent> events = out.pressureEvents();
  for (ScopeEvent& e : events) {
    if (!e.gone) e.total = in.pressureTotal(e.scope);
  }
  return events;
}

Output drive(Engine& engine, Sensors& in, Actuator& out, const Clock& clock, Input input, DecideLog* log) {
  for (;;) {
    input.now = input.tick && input.now != TimePoint{} ? input.now : clock.now();
    input.pressure = takeEvents(out, in);
    input.stop = out.stopPending();
    if (log) log->input(input);
    Output said = engine.decide(input);
    out.publish(std::move(said.events));
    if (!asks(said)) return said;
    input = Input{};
    if (said.command) {
      if (log) log->did(*said.command);
      input.result = carryOut(*said.command, out, clock);
    }
    if (!said.read.empty()) {
      if (log) log->asked(said.read);
      input.readings = takeReadings(said.read, in);
    }
  }
}

TimePoint runTurn(Engine& engine, Sensors& in, Actuator& out, const Clock& clock, TimePoint now,
                  DecideLog* log) {
  Input tick;
  tick.now = now;
  tick.tick = true;
  tick.readings = takeReadings(tickReads(), in);
  const Output last = drive(engine, in, out, clock, std::move(tick), log);
  return last.wake.value_or(now);
}

void betweenTurns(Engine& engine, Sensors& in, Actuator& out, const Clock& clock, DecideLog* log) {
  drive(engine, in, out, clock, Input{}, log);
}

}  // namespace reclaimd::controller

// The shell's side of Engine::decide (Commands.h): hand the engine what happened, carry out the
// command it answers with, hand it the result, until it has none. The same code runs in the
// daemon (over the real adapters) and in the engine's scenario tests (over a simulated machine
// and a manual clock).
#pragma once

#include <vector>

#include "base/Clock.h"
#include "cgroup/Reclaim.h"
#include "controller/engine/Commands.h"
#include "controller/engine/Engine.h"
#include "controller/shell/Sensors.h"

namespace reclaimd::controller {

// What the engine's commands do to the machine, and what the loop notices meanwhile.
class Actuator {
 public:
  virtual ~Actuator() = default;
  // One memory.reclaim request, timed. An open that fails comes back as the write's error too.
  virtual cgroup::ReclaimWrite reclaim(const CgroupRef& cgroup, std::uint64_t bytes, cgroup::ReclaimFormat format) = 0;
  // sync (bounded: a hung filesystem must not hang the loop), then drop_caches.
  virtual Result<void> dropCaches() = 0;
  virtual Result<void> compact() = 0;
  // The capability probe again (after an EINVAL).
  virtual Capabilities reprobe() = 0;
  // Opens a pressure scope's file and registers its trigger; closes one.
  virtual Watched watch(const WatchScope& scope) = 0;
  virtual void unwatch(ScopeId id) = 0;
  // A stop (SIGTERM, SIGINT) is pending: peeked, not consumed.
  virtual bool stopPending() = 0;
  // The PSI trigger events since the last call.
  virtual std::vector<ScopeEvent> pressureEvents() = 0;
  // What the engine said, passed on command by command so the log follows the work as it
  // happens (a step of many chunks takes a while; an operator, or a test sending SIGTERM at the
  // first chunk, must not see its lines only afterwards).
  virtual void publish(Events events) = 0;
};

// Sees each input the engine is given and each command it answers with (`reclaimd record`).
class DecideLog {
 public:
  virtual ~DecideLog() = default;
  virtual void input(const Input& input) = 0;
  virtual void did(const Command& command) = 0;
  // The reads an Output asked for (taken after its command, if any).
  virtual void asked(const Reads&) {}
};

// Carries out one command, timed by `clock`; answers its result.
CommandResult carryOut(const Command& command, Actuator& out, const Clock& clock);

// Takes the reads the engine asked for from `in`, each with its own error: the one answer to a
// Reads, in the daemon (over the real adapters) and in the tests (over a simulated machine).
Readings takeReadings(const Reads& reads, Sensors& in);

// The PSI trigger events since the last call, each with its scope's total read now (a removed
// cgroup's without).
std::vector<ScopeEvent> takeEvents(Actuator& out, Sensors& in);

// Gives the engine `first` (its time, its pressure events and a pending stop are filled in
// here), then carries out its commands and takes the reads it asks for from `in`, until it asks
// for neither. Answers the last Output: its wake is set when a turn ended.
Output drive(Engine& engine, Sensors& in, Actuator& out, const Clock& clock, Input first, DecideLog* log = nullptr);

// A turn at `now` (the timer fired; its input carries the tick's readings, tickReads()); answers
// when the next one is due.
TimePoint runTurn(Engine& engine, Sensors& in, Actuator& out, const Clock& clock, TimePoint now,
                  DecideLog* log = nullptr);

// Between turns: hands the engine the pending PSI trigger events, and carries out what it answers
// (after a probe or a reload, the scopes to watch).
void betweenTurns(Engine& engine, Sensors& in, Actuator& out, const Clock& clock, DecideLog* log = nullptr);

}  // namespace reclaimd::controller

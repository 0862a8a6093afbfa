// One loop turn: the engine decides, the actuator carries the plan out, the engine is told
// what happened. The same code runs in the daemon (over the real adapters) and in the engine's
// scenario tests (over a simulated machine and a manual clock).
#pragma once

#include <cstdint>
#include <vector>

#include "base/Clock.h"
#include "cgroup/Reclaim.h"
#include "controller/Probe.h"
#include "controller/engine/Engine.h"
#include "controller/engine/Ports.h"

namespace reclaimd::controller {

struct ScopeEvent {
  ScopeId scope = kMachineScope;
  bool gone = false;  // EPOLLERR/EPOLLHUP: the cgroup was removed
};

// What a turn does to the machine, and what it must notice while doing it.
class Actuator {
 public:
  virtual ~Actuator() = default;
  // One memory.reclaim request, timed. Open failures come back as a status too (Gone, Failed).
  virtual cgroup::ReclaimWrite reclaim(const CgroupRef& cgroup, std::uint64_t bytes, cgroup::ReclaimFormat format) = 0;
  // sync (bounded: a hung filesystem must not hang the loop), then drop_caches.
  virtual Result<void> dropCaches() = 0;
  virtual Result<void> compact() = 0;
  // A stop (SIGTERM, SIGINT) is pending: peeked, not consumed.
  virtual bool stopPending() = 0;
  // The PSI trigger events since the last call.
  virtual std::vector<ScopeEvent> pressureEvents() = 0;
  // The capability probe again (after an EINVAL).
  virtual Capabilities reprobe() = 0;
  // What the engine said during a step, passed on chunk by chunk so the log follows the work
  // as it happens (a step of many chunks takes a while; an operator, or a test sending SIGTERM
  // at the first chunk, must not see its lines only afterwards).
  virtual void publish(Events events) = 0;
};

// Runs one turn at `now` and returns its plan (plan.wake: when the next one is due).
Plan runTurn(Engine& engine, Sensors& in, Actuator& out, const Clock& clock, TimePoint now);

// Passes the pending PSI trigger events to the engine.
void deliverPressureEvents(Engine& engine, Sensors& in, Actuator& out, TimePoint now);

}  // namespace reclaimd::controller

// The shell's ports over the real machine: Sensors reads /proc and the cgroup tree, Actuator
// writes memory.reclaim, drop_caches and compact_memory.
#pragma once

#include <chrono>
#include <functional>
#include <string>

#include "controller/Paths.h"
#include "controller/shell/Sensors.h"
#include "controller/shell/PressureIo.h"
#include "controller/shell/Tracker.h"
#include "controller/shell/Turn.h"
#include "proc/Reader.h"

namespace reclaimd::controller {

// Runs `sync` on a detached thread; true when it finished within `wait`. A sync that never
// returns keeps only its own thread (in the kernel), not the loop and with it SIGTERM; while it
// runs, another call starts none and returns false at once.
bool syncWithin(const std::function<void()>& sync, std::chrono::nanoseconds wait);

class SystemSensors final : public Sensors {
 public:
  // `tracker` may be null (no cgroup tree in use).
  SystemSensors(proc::Reader& proc, Tracker* tracker, PressureIo& pressure, std::chrono::nanoseconds tick)
      : proc_(proc), tracker_(tracker), pressure_(pressure), tick_(tick) {}
  void setTracker(Tracker* tracker) { tracker_ = tracker; }

  Result<CpuReading> cpu() override;
  std::chrono::nanoseconds ownCpu() override;
  Result<proc::Meminfo> meminfo() override { return proc_.meminfo(); }
  Result<proc::Workingset> machineRefaults() override { return proc_.workingset(); }
  Result<cgroup::Tree> tree(const cgroup::Descend& descend) override;
  Result<MemoryReading> memory(const CgroupRef& cgroup) override;
  Result<std::chrono::nanoseconds> cgroupCpu(const CgroupRef& cgroup) override;
  Result<std::uint64_t> pressureTotal(ScopeId scope) override { return pressure_.total(scope); }
  Result<CgroupCpuScan> cgroupCpuScan() override;

 private:
  Result<cgroup::Cgroup*> open(const CgroupRef& ref);

  proc::Reader& proc_;
  Tracker* tracker_;
  PressureIo& pressure_;
  std::chrono::nanoseconds tick_;
};

class SystemActuator final : public Actuator {
 public:
  // `stopPending` peeks at the signalfd; `reprobe` runs the capability probe.
  SystemActuator(Paths paths, Tracker* tracker, PressureIo& pressure, std::function<bool()> stopPending,
                 std::function<Capabilities()> reprobe, std::function<void(Events)> publish)
      : paths_(std::move(paths)),
        tracker_(tracker),
        pressure_(pressure),
        stopPending_(std::move(stopPending)),
        reprobe_(std::move(reprobe)),
        publish_(std::move(publish)) {}
  void setTracker(Tracker* tracker) { tracker_ = tracker; }

  cgroup::ReclaimWrite reclaim(const CgroupRef& cgroup, std::uint64_t bytes, cgroup::ReclaimFormat format) override;
  Result<void> dropCaches() override;
  Result<void> compact() override;
  bool stopPending() override { return stopPending_(); }
  std::vector<ScopeEvent> pressureEvents() override { return pressure_.take(); }
  Capabilities reprobe() override { return reprobe_(); }
  Watched watch(const WatchScope& scope) override { return pressure_.watch(scope, tracker_); }
  void unwatch(ScopeId id) override { pressure_.unwatch(id); }
  void publish(Events events) override { publish_(std::move(events)); }

 private:
  Paths paths_;
  Tracker* tracker_;
  PressureIo& pressure_;
  std::function<bool()> stopPending_;
  std::function<Capabilities()> reprobe_;
  std::function<void(Events)> publish_;
};

}  // namespace reclaimd::controller

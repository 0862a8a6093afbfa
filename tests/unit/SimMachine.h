// A simulated machine for the engine's scenario tests: the shell's ports (Sensors, Actuator)
// over a model of a cgroup tree with file cache, CPU use, refaults and pressure, driven by a
// manual clock. A scenario runs minutes of the daemon's behaviour in milliseconds, through the
// same command loop the daemon runs (controller/shell/Turn.h). The end-to-end tests run the
// binary over the same model written as files (SimFiles.h).
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "base/Clock.h"
#include "controller/engine/Engine.h"
#include "controller/shell/Turn.h"

namespace reclaimd::testing {

using controller::Capabilities;
using controller::CgroupRef;
using controller::ScopeId;

inline constexpr std::uint64_t kMiB = 1024 * 1024;

class ManualClock final : public Clock {
 public:
  TimePoint now() const override { return now_; }
  void advance(std::chrono::nanoseconds d) { now_ += d; }
  void set(TimePoint t) { now_ = std::max(now_, t); }

 private:
  TimePoint now_ = TimePoint{} + std::chrono::hours(1);
};

struct SimCgroup {
  std::uint64_t inode = 0;
  std::uint64_t file = 0;      // reclaimable file cache, bytes (own, not the subtree's)
  std::uint64_t refaults = 0;     // workingset_refault_file, pages (own)
  std::uint64_t activations = 0;  // workingset_activate_file, pages (own)
  // The work's hot set: cache it keeps reading. Taken below it, the cache is read back from
  // disk at once (refaults), as a workload re-reading its files would.
  std::uint64_t hot = 0;
  // Of the hot set, what the kernel gives up before any cold cache, once: it lies behind cold
  // cache in the kernel's order until it is read back (6.12, cold cache read through a mapping
  // after the hot set was read). Taken, it is read back at once and kept from then on.
  std::uint64_t unlearned = 0;
  std::uint64_t readBack = 0;  // taken from `unlearned`, read back at the next moment
  // Of `file`, what reclaim cannot take (mlocked, or dirty under writeback): counted as
  // reclaimable in memory.stat, never freed.
  std::uint64_t pinned = 0;
  // How often the work reads its hot set: what probes take of it comes back at the next such
  // read (a multiple of this since the clock's epoch). 0: at once, a reader every moment.
  std::chrono::nanoseconds rereadEvery{0};
  // How long each such read takes to bring back what it reads from disk, at an even rate (a VM's
  // disk: tens of MiB a second). 0: at once.
  std::chrono::nanoseconds readTakes{0};
  std::uint64_t arriving = 0;  // read back by the current read, not yet in
  double arrivingPerSecond = 0;
  // Whether the kernel counts refaults as activations (6.1's and 6.12's LRUs do; 7.2's MGLRU
  // counts a read() refault as a restore instead).
  bool activates = true;
  double cpuShare = 0;  // CPUs busy (0.25 = a quarter of one CPU)
  std::chrono::nanoseconds usage{0};
  std::uint64_t stallUsec = 0;  // memory.pressure some total
  double stallShare = 0;        // stall per wall time
};

struct Write {
  TimePoint at;
  std::string path;
  std::uint64_t bytes;
};

class SimMachine final : public controller::Sensors, public controller::Actuator {
 public:
  explicit SimMachine(ManualClock& clock, std::uint64_t memTotal = 4ULL << 30, int cpus = 2);

  // The model. Paths are relative ("" is the root); a cgroup's parents must exist.
  void addCgroup(const std::string& path, std::uint64_t fileBytes);
  void removeCgroup(const std::string& path);
  SimCgroup& cgroup(const std::string& path) { return cgroups_.at(path); }
  const std::map<std::string, SimCgroup>& cgroups() const { return cgroups_; }
  bool has(const std::string& path) const { return cgroups_.count(path) > 0; }
  // File cache of `path`'s whole subtree.
  std::uint64_t subtreeFile(const std::string& path) const;
  void setMachineBusy(double cpus) { machineBusy_ = cpus; }
  // The machine's busy CPU is the work of `path` (and of no cgroup when empty): a cgroup that
  // does the machine's work is not quiet by its own CPU.
  void chargeMachineTo(std::string path) { chargeTo_ = std::move(path); }
  void setMachineStall(double share) { machineStallShare_ = share; }
  // Freed per byte asked (6.1 frees 15-25 % more than asked).
  void setOvershoot(double factor) { overshoot_ = factor; }
  void setWriteTime(std::chrono::nanoseconds d) { writeTime_ = d; }
  // The statuses the next writes return (front first); afterwards Done.
  void queueWriteStatus(cgroup::ReclaimStatus status, int err) { faults_.push_back({status, err}); }
  // A read fault for the next `count` reads of kind `what` ("cpu", "meminfo", "memory", ...).
  void failReads(const std::string& what, int err, int count) { readFaults_[what] = {err, count}; }
  // The PSI trigger on `path`'s memory.pressure fires ("" is the machine's, /proc/pressure/memory),
  // or its file reports the cgroup removed (`gone`): an event for every scope watching it, by the
  // id it was watched under, as the shell's epoll does.
  void pressureFires(const std::string& path, bool gone = false);
  void setCapabilities(const Capabilities& caps) { caps_ = caps; }
  // Called before each write is applied, with the model as it is: the property tests' checks.
  std::function<void(const std::string& path, std::uint64_t bytes)> beforeWrite;

  // Brings the model's counters up to the clock (called by every read).
  void advance();
  // Whether advancing the clock leaves every cgroup's counters as they are (no CPU, stall or
  // hot set below its cache anywhere).
  bool cgroupsStill() const;

  const std::vector<Write>& writes() const { return writes_; }
  int walks = 0;
  std::size_t listed = 0;            // cgroups the last walk listed below (the rest were unlisted)
  std::map<std::string, int> reads;  // reads by kind, for "a quiet tick reads /proc/stat alone"

  // Sensors
  Result<controller::CpuReading> cpu() override;
  std::chrono::nanoseconds ownCpu() override { return std::chrono::nanoseconds(0); }
  Result<proc::Meminfo> meminfo() override;
  Result<proc::Workingset> machineRefaults() override;
  Result<cgroup::Tree> tree(const cgroup::Descend& descend) override;
  Result<controller::MemoryReading> memory(const CgroupRef& ref) override;
  Result<std::chrono::nanoseconds> cgroupCpu(const CgroupRef& ref) override;
  Result<std::uint64_t> pressureTotal(ScopeId scope) override;
  Result<controller::CgroupCpuScan> cgroupCpuScan() override;
  // Actuator
  cgroup::ReclaimWrite reclaim(const CgroupRef& ref, std::uint64_t bytes, cgroup::ReclaimFormat format) override;
  Result<void> dropCaches() override;
  Result<void> compact() override;
  bool stopPending() override { return false; }
  std::vector<controller::ScopeEvent> pressureEvents() override { return std::exchange(events_, {}); }
  Capabilities reprobe() override { return caps_; }
  controller::Watched watch(const controller::WatchScope& scope) override {
    watching[scope.id] = scope;
    return controller::Watched{feedAs, "test", false};
  }
  void unwatch(ScopeId id) override { watching.erase(id); }
  void publish(Events events) override {
    for (Event& e : events)
      published.push_back(std::move(e));
  }
  Events published;  // what the engine said, in order
  // How the shell watches the scopes it is told to watch, and which it watches now.
  controller::PressureFeed feedAs = controller::PressureFeed::Trigger;
  std::map<ScopeId, controller::WatchScope> watching;

 private:
  static void readBackNow(SimCgroup& c, std::uint64_t bytes);
  static void arrive(SimCgroup& c, double seconds);
  std::optional<Error> fault(const std::string& what);
  const SimCgroup* find(const CgroupRef& ref) const;
  std::uint64_t take(const std::string& path, std::uint64_t bytes);

  ManualClock& clock_;
  std::uint64_t memTotal_;
  int cpus_;
  TimePoint last_;
  std::map<std::string, SimCgroup> cgroups_;
  std::uint64_t nextInode_ = 100;
  double machineBusy_ = 0, machineStallShare_ = 0, overshoot_ = 1.0;
  std::string chargeTo_;
  std::chrono::nanoseconds busy_{0}, total_{0};
  std::uint64_t machineStallUsec_ = 0;
  std::chrono::nanoseconds writeTime_{std::chrono::milliseconds(20)};
  std::deque<std::pair<cgroup::ReclaimStatus, int>> faults_;
  std::map<std::string, std::pair<int, int>> readFaults_;
  std::vector<controller::ScopeEvent> events_;
  std::vector<Write> writes_;
  Capabilities caps_;
};

// Capabilities of a 6.12 kernel with everything available.
Capabilities fullCapabilities();

// Runs the engine turn after turn, each at the time the last plan asked, until `until` (or
// `stop` answers true after a turn). Returns the number of turns.
// `log` sees every input and command, as `reclaimd record` does.
int runUntil(controller::Engine& engine, SimMachine& sim, ManualClock& clock, TimePoint until,
             const std::function<bool()>& stop = {}, controller::DecideLog* log = nullptr);

}  // namespace reclaimd::testing

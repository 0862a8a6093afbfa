// A simulated machine for end-to-end runs of the binary on a fixture tree: a thread advances
// /proc/stat (and chosen cgroups' cpu.stat) every 20 ms; regular files stand in for
// memory.reclaim, drop_caches and compact_memory and record the last request written.
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>

#include "tests/unit/Fixture.h"

namespace reclaimd::testing {

class FakeMachine {
 public:
  // Writes proc/ and cg/ (the cgroup root) under `fx` and starts the clock thread.
  explicit FakeMachine(Fixture& fx);
  ~FakeMachine();

  // Machine-wide busy ticks per 20 ms update, against 100 idle ticks.
  void setBusy(int ticks) { busyPerTick_ = ticks; }
  void setMalformed(bool m) { malformed_ = m; }
  // A cgroup below cg/ with memory.stat (file cache in MiB), cpu.stat and memory.reclaim.
  void addCgroup(const std::string& path, unsigned long long fileMiB);
  // The same, written once and never updated: a cgroup that does nothing, cheap by the
  // thousand (the clock thread rewrites the others' files every update).
  void addStillCgroup(const std::string& path, unsigned long long fileMiB);
  // Removes the cgroup's directory (and stops advancing its cpu.stat), as rmdir would.
  void removeCgroup(const std::string& path);
  // CPU the cgroup uses, in microseconds per 20 ms update (20000 = one whole CPU).
  void setCgroupBusy(const std::string& path, unsigned long long usecPerTick);
  // Memory stall in the cgroup's memory.pressure, microseconds per 20 ms update.
  void setCgroupStall(const std::string& path, unsigned long long usecPerTick);
  // File pages refaulted per 20 ms update (workingset_refault_file grows).
  void setCgroupRefaults(const std::string& path, unsigned long long pagesPerTick);
  // The cgroup's file cache now, in MiB.
  void setCgroupFile(const std::string& path, unsigned long long fileMiB);

 private:
  Fixture& fx_;
  std::atomic<bool> done_{false}, malformed_{false};
  std::atomic<int> busyPerTick_{0};
  std::mutex mutex_;
  struct Cg {
    unsigned long long usage = 0, usagePerTick = 0;
    unsigned long long stall = 0, stallPerTick = 0;
    unsigned long long refaults = 0, refaultsPerTick = 0;
    unsigned long long fileMiB = 0;
  };
  void writeCgroup(const std::string& path, const Cg& cg);
  void update(const std::string& path, const std::function<void(Cg&)>& change);
  std::map<std::string, Cg> cgroups_;
  std::thread thread_;
};

}  // namespace reclaimd::testing

// A simulated machine for end-to-end runs of the binary on a fixture tree: a thread advances
// /proc/stat (and chosen cgroups' cpu.stat) every 20 ms; regular files stand in for
// memory.reclaim, drop_caches and compact_memory and record the last request written.
#pragma once

#include <atomic>
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
  // Removes the cgroup's directory (and stops advancing its cpu.stat), as rmdir would.
  void removeCgroup(const std::string& path);
  // CPU the cgroup uses, in microseconds per 20 ms update (20000 = one whole CPU).
  void setCgroupBusy(const std::string& path, unsigned long long usecPerTick);

 private:
  Fixture& fx_;
  std::atomic<bool> done_{false}, malformed_{false};
  std::atomic<int> busyPerTick_{0};
  std::mutex mutex_;
  std::map<std::string, std::pair<unsigned long long, unsigned long long>> cgroupCpu_;  // usage, per tick
  std::thread thread_;
};

}  // namespace reclaimd::testing

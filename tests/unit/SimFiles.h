// The simulated machine as the binary sees it: SimMachine's model written as a fixture tree
// (proc/, and cg/ as the cgroup root) and kept up with the wall clock by a thread that brings
// the model to the time every 20 ms and rewrites the files whose content changed. Regular files
// stand in for memory.reclaim, drop_caches and compact_memory and keep the last request written;
// the model does not apply them (what a kernel does with a request, the VM tests show).
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>

#include "tests/unit/Fixture.h"
#include "tests/unit/SimMachine.h"

namespace reclaimd::testing {

class SimFiles {
 public:
  // Writes proc/ and cg/ under `fx` for a machine of `memTotal` bytes whose root holds
  // `rootFile` bytes of file cache, and starts the thread.
  explicit SimFiles(Fixture& fx, std::uint64_t memTotal = 2048 * kMiB, std::uint64_t rootFile = 550 * kMiB);
  ~SimFiles();
  SimFiles(const SimFiles&) = delete;
  SimFiles& operator=(const SimFiles&) = delete;

  // Edits the model between two updates; what it changed is in the files when this returns.
  void change(const std::function<void(SimMachine&)>& edit);

 private:
  void render();
  void renderCgroups();
  void put(const std::string& file, std::string content);

  Fixture& fx_;
  ManualClock clock_;
  SimMachine sim_;
  std::mutex mutex_;
  std::map<std::string, std::string> written_;  // file -> the content last written there
  std::set<std::string> dirs_;                  // the cgroups written (below the root)
  bool edited_ = true;                          // the model changed since the cgroups were written
  std::atomic<bool> done_{false};
  std::thread thread_;
};

}  // namespace reclaimd::testing

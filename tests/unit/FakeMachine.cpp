#include "tests/unit/FakeMachine.h"

#include <chrono>

namespace reclaimd::testing {

FakeMachine::FakeMachine(Fixture& fx) : fx_(fx) {
  fx_.write("proc/stat", procStat(0, 0, 0));
  fx_.write("proc/meminfo", meminfo(2048, 1000, 300, 200, 50));
  fx_.write("proc/pressure/memory", "some avg10=0.00 avg60=0.00 avg300=0.00 total=0\n");
  fx_.write("proc/sys/vm/drop_caches", "");
  fx_.write("proc/sys/vm/compact_memory", "");
  fx_.write("proc/self/cgroup", "0::/\n");
  fx_.write("cg/cgroup.controllers", "cpu io memory pids\n");
  fx_.write("cg/memory.reclaim", "");
  fx_.write("cg/cpu.stat", "usage_usec 0\n");
  thread_ = std::thread([this] {
    unsigned long long busy = 0, idle = 0;
    while (!done_) {
      busy += static_cast<unsigned long long>(busyPerTick_.load());
      idle += 100;
      fx_.write("proc/stat", malformed_ ? std::string("cpu  12 x\n") : procStat(busy, 0, idle));
      {
        std::lock_guard<std::mutex> lock(mutex_);
        for (auto& [path, cpu] : cgroupCpu_) {
          cpu.first += cpu.second;
          fx_.write("cg/" + path + "/cpu.stat", "usage_usec " + std::to_string(cpu.first) + "\nuser_usec 0\n");
        }
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  });
}

FakeMachine::~FakeMachine() {
  done_ = true;
  thread_.join();
}

void FakeMachine::addCgroup(const std::string& path, unsigned long long fileMiB) {
  const std::string dir = "cg/" + path;
  fx_.write(dir + "/memory.stat", "anon 0\nfile " + std::to_string(fileMiB << 20) + "\nactive_file " +
                                      std::to_string(fileMiB << 19) + "\ninactive_file " +
                                      std::to_string(fileMiB << 19) + "\n");
  fx_.write(dir + "/memory.reclaim", "");
  fx_.write(dir + "/cpu.stat", "usage_usec 0\n");
  std::lock_guard<std::mutex> lock(mutex_);
  cgroupCpu_[path] = {0, 0};
}

void FakeMachine::removeCgroup(const std::string& path) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto it = cgroupCpu_.begin(); it != cgroupCpu_.end();) {
    const bool below = it->first == path || it->first.rfind(path + "/", 0) == 0;
    it = below ? cgroupCpu_.erase(it) : std::next(it);
  }
  fx_.remove("cg/" + path);
}

void FakeMachine::setCgroupBusy(const std::string& path, unsigned long long usecPerTick) {
  std::lock_guard<std::mutex> lock(mutex_);
  cgroupCpu_[path].second = usecPerTick;
}

}  // namespace reclaimd::testing

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
        for (auto& [path, cg] : cgroups_) {
          cg.usage += cg.usagePerTick;
          cg.stall += cg.stallPerTick;
          cg.refaults += cg.refaultsPerTick;
          writeCgroup(path, cg);
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

void FakeMachine::writeCgroup(const std::string& path, const Cg& cg) {
  const std::string dir = "cg/" + path;
  fx_.write(dir + "/cpu.stat", "usage_usec " + std::to_string(cg.usage) + "\nuser_usec 0\n");
  fx_.write(dir + "/memory.pressure", "some avg10=0.00 avg60=0.00 avg300=0.00 total=" + std::to_string(cg.stall) +
                                          "\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n");
  fx_.write(dir + "/memory.stat", "anon 0\nfile " + std::to_string(cg.fileMiB << 20) + "\nactive_file " +
                                      std::to_string(cg.fileMiB << 19) + "\ninactive_file " +
                                      std::to_string(cg.fileMiB << 19) + "\nworkingset_refault_file " +
                                      std::to_string(cg.refaults) + "\n");
}

void FakeMachine::addCgroup(const std::string& path, unsigned long long fileMiB) {
  std::lock_guard<std::mutex> lock(mutex_);
  Cg& cg = cgroups_[path];
  cg.fileMiB = fileMiB;
  fx_.write("cg/" + path + "/memory.reclaim", "");
  writeCgroup(path, cg);
}

void FakeMachine::addStillCgroup(const std::string& path, unsigned long long fileMiB) {
  Cg cg;
  cg.fileMiB = fileMiB;
  fx_.write("cg/" + path + "/memory.reclaim", "");
  writeCgroup(path, cg);
}

void FakeMachine::removeCgroup(const std::string& path) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto it = cgroups_.begin(); it != cgroups_.end();) {
    const bool below = it->first == path || it->first.rfind(path + "/", 0) == 0;
    it = below ? cgroups_.erase(it) : std::next(it);
  }
  fx_.remove("cg/" + path);
}

void FakeMachine::setCgroupBusy(const std::string& path, unsigned long long usecPerTick) {
  update(path, [&](Cg& cg) { cg.usagePerTick = usecPerTick; });
}

void FakeMachine::setCgroupStall(const std::string& path, unsigned long long usecPerTick) {
  update(path, [&](Cg& cg) { cg.stallPerTick = usecPerTick; });
}

void FakeMachine::setCgroupRefaults(const std::string& path, unsigned long long pagesPerTick) {
  update(path, [&](Cg& cg) { cg.refaultsPerTick = pagesPerTick; });
}

void FakeMachine::setCgroupFile(const std::string& path, unsigned long long fileMiB) {
  update(path, [&](Cg& cg) { cg.fileMiB = fileMiB; });
}

void FakeMachine::update(const std::string& path, const std::function<void(Cg&)>& change) {
  std::lock_guard<std::mutex> lock(mutex_);
  change(cgroups_[path]);
}

}  // namespace reclaimd::testing

#include "tests/unit/SimFiles.h"

#include <chrono>

namespace reclaimd::testing {

using namespace std::chrono;

namespace {

// /proc/stat counts USER_HZ (100 Hz) ticks.
unsigned long long ticks(nanoseconds d) { return static_cast<unsigned long long>(d / milliseconds(10)); }

std::string parentOf(const std::string& path) {
  const auto slash = path.rfind('/');
  return slash == std::string::npos ? "" : path.substr(0, slash);
}

// What cpu.stat and memory.stat count for a cgroup: its subtree's.
struct Subtree {
  nanoseconds usage{0};
  std::uint64_t file = 0;
  std::uint64_t refaults = 0;
  std::uint64_t activations = 0;
};

std::map<std::string, Subtree> subtrees(const std::map<std::string, SimCgroup>& cgroups) {
  std::map<std::string, Subtree> sums;
  // A parent's path is a prefix of its child's, so it sorts before it: backwards, every
  // child is summed before its parent is passed on.
  for (auto it = cgroups.rbegin(); it != cgroups.rend(); ++it) {
    Subtree& s = sums[it->first];
    s.usage += it->second.usage;
    s.file += it->second.file;
    s.refaults += it->second.refaults;
    s.activations += it->second.activations;
    if (it->first.empty()) continue;
    Subtree& parent = sums[parentOf(it->first)];
    parent.usage += s.usage;
    parent.file += s.file;
    parent.refaults += s.refaults;
    parent.activations += s.activations;
  }
  return sums;
}

std::string pressureFile(std::uint64_t someUsec) {
  return "some avg10=0.00 avg60=0.00 avg300=0.00 total=" + std::to_string(someUsec) +
         "\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n";
}

}  // namespace

SimFiles::SimFiles(Fixture& fx, std::uint64_t memTotal, std::uint64_t rootFile)
    : fx_(fx), sim_(clock_, memTotal) {
  sim_.cgroup("").file = rootFile;
  fx_.write("proc/sys/vm/drop_caches", "");
  fx_.write("proc/sys/vm/compact_memory", "");
  fx_.write("proc/self/cgroup", "0::/\n");
  fx_.write("cg/cgroup.controllers", "cpu io memory pids\n");
  fx_.write("cg/memory.reclaim", "");
  render();
  thread_ = std::thread([this] {
    const TimePoint began = SteadyClock::now();
    const TimePoint simBegan = clock_.now();
    while (!done_) {
      // The model's clock is the wall clock: the binary judges idleness by its own clock.
      std::this_thread::sleep_for(milliseconds(20));
      std::lock_guard<std::mutex> lock(mutex_);
      clock_.set(simBegan + (SteadyClock::now() - began));
      render();
    }
  });
}

SimFiles::~SimFiles() {
  done_ = true;
  thread_.join();
}

void SimFiles::change(const std::function<void(SimMachine&)>& edit) {
  std::lock_guard<std::mutex> lock(mutex_);
  edit(sim_);
  edited_ = true;
  render();
}

void SimFiles::put(const std::string& file, std::string content) {
  auto it = written_.find(file);
  if (it != written_.end() && it->second == content) return;
  fx_.write(file, content);
  written_[file] = std::move(content);
}

void SimFiles::render() {
  const auto cpu = sim_.cpu();
  const auto mem = sim_.meminfo();
  const auto stall = sim_.pressureTotal(controller::kMachineScope);
  put("proc/stat", procStat(ticks(cpu->busy), 0, ticks(cpu->total - cpu->busy)));
  const std::uint64_t file = mem->inactiveFile;
  put("proc/meminfo", meminfo(mem->memTotal / kMiB, mem->memFree / kMiB, file / 2 / kMiB, (file - file / 2) / kMiB, 0));
  put("proc/pressure/memory", "some avg10=0.00 avg60=0.00 avg300=0.00 total=" + std::to_string(*stall) + "\n");
  // A tree of still cgroups (a thousand idle pods) costs nothing between edits.
  if (!edited_ && sim_.cgroupsStill()) return;
  edited_ = false;
  renderCgroups();
}

void SimFiles::renderCgroups() {
  const auto sums = subtrees(sim_.cgroups());
  put("cg/cpu.stat", "usage_usec " + std::to_string(sums.at("").usage / microseconds(1)) + "\n");
  for (const auto& [path, c] : sim_.cgroups()) {
    if (path.empty()) continue;
    const std::string dir = "cg/" + path;
    const Subtree& s = sums.at(path);
    if (dirs_.insert(path).second) put(dir + "/memory.reclaim", "");
    put(dir + "/cpu.stat", "usage_usec " + std::to_string(s.usage / microseconds(1)) + "\nuser_usec 0\n");
    put(dir + "/memory.pressure", pressureFile(c.stallUsec));
    put(dir + "/memory.stat", "anon 0\nfile " + std::to_string(s.file) + "\nactive_file " + std::to_string(s.file / 2) +
                                  "\ninactive_file " + std::to_string(s.file - s.file / 2) +
                                  "\nworkingset_refault_file " + std::to_string(s.refaults) +
                                  "\nworkingset_activate_file " + std::to_string(s.activations) + "\n");
  }
  // Cgroups the model no longer has leave as rmdir would take them.
  for (auto gone = dirs_.begin(); gone != dirs_.end();) {
    if (sim_.has(*gone)) {
      ++gone;
      continue;
    }
    const std::string dir = "cg/" + *gone;
    fx_.remove(dir);
    for (auto it = written_.lower_bound(dir + "/"); it != written_.end() && it->first.rfind(dir + "/", 0) == 0;)
      it = written_.erase(it);
    gone = dirs_.erase(gone);
  }
}

}  // namespace reclaimd::testing

// One per-cgroup pass over fixture trees of 100, 1,000 and 10,000 cgroups: reclaimd's own CPU
// per pass and per cgroup (target: linear, under 10 us per cgroup; a 10,000-cgroup pass under
// 50 ms), with rules that name the pods (the walk lists only where a rule could match) and
// with a "**" rule that makes it list every cgroup.
//
// The trees are shaped like a Kubernetes node: system.slice with services, kubepods.slice with
// pods of three containers each, every cgroup with the control files a real one lists (so the
// walk reads directories of realistic size). The policy makes every pod a target judged by its
// own CPU, and system.slice a disabled one. A pass is what the daemon does on a tick that walks:
// the engine's turn: walk, resolve each cgroup's rule, decompose, carry target state over, read
// each target's cpu.stat and memory.stat, share the budget (a dry run: writes cost the kernel's
// work, not reclaimd's).
//
// Each case also checks what it measured (every cgroup walked, the busy scan stopped at its
// bound, every pod or sibling a target) and the run exits 1 when one does not hold, so the
// test command's smoke form (bench_pass) asserts them. The 10,000-sibling pass is left to the
// full run: the turn where its 9,999 targets pass their grace together asks for 9,999 pressure
// watches, one command a decide(), each comparing every watched scope with every wanted one:
// 4.4 s at 3,000 siblings, minutes at 10,000 on 2 cores (slowest_turn_ms: the slowest turn
// before the measured ones).
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <vector>

#include "base/Quantities.h"
#include "cgroup/Tree.h"
#include "controller/engine/Engine.h"
#include "controller/shell/BusyScan.h"
#include "controller/shell/Turn.h"
#include "controller/shell/Tracker.h"
#include "policies/Loader.h"
#include "policies/Step.h"

namespace reclaimd {
namespace {

namespace fs = std::filesystem;

constexpr const char* kPolicy = R"(rules:
  - match: kubepods.slice/*
    idle_source: cgroup
  - match: system.slice
    mode: disabled
)";
// The same targets, but a "**" rule that could match anywhere (it matches nothing here): the
// walk must list every cgroup, the worst case.
constexpr const char* kPolicyEverywhere = R"(rules:
  - match: kubepods.slice/*
    idle_source: cgroup
  - match: system.slice
    mode: disabled
  - match: "**/*.mount"
    mode: disabled
)";

// On the flat tree: every sibling a target judged by its own CPU.
constexpr const char* kPolicyFlat = R"(rules:
  - match: "*"
    idle_source: cgroup
)";

// The files a cgroup v2 directory lists with the cpu, io, memory and pids controllers.
constexpr const char* kControlFiles[] = {
    "cgroup.controllers", "cgroup.events", "cgroup.freeze",   "cgroup.kill",
    "cgroup.max.depth",   "cgroup.procs",  "cgroup.stat",     "cgroup.subtree_control",
    "cgroup.threads",     "cgroup.type",   "cpu.max",         "cpu.pressure",
    "cpu.weight",         "io.max",        "io.pressure",     "io.stat",
    "memory.current",     "memory.events", "memory.high",     "memory.low",
    "memory.max",         "memory.min",    "memory.pressure", "memory.swap.max",
    "pids.current",       "pids.max"};

std::string memoryStat(unsigned seed) {
  std::string s;
  const char* keys[] = {"anon",
                        "file",
                        "kernel",
                        "kernel_stack",
                        "pagetables",
                        "sec_pagetables",
                        "percpu",
                        "sock",
                        "vmalloc",
                        "shmem",
                        "file_mapped",
                        "file_dirty",
                        "file_writeback",
                        "swapcached",
                        "anon_thp",
                        "inactive_anon",
                        "active_anon",
                        "inactive_file",
                        "active_file",
                        "unevictable",
                        "slab_reclaimable",
                        "slab_unreclaimable",
                        "slab",
                        "workingset_refault_anon",
                        "workingset_refault_file",
                        "workingset_activate_anon",
                        "workingset_activate_file",
                        "pgscan",
                        "pgsteal",
                        "pgfault",
                        "pgmajfault"};
  unsigned v = seed * 7919u;
  for (const char* k : keys)
    s += std::string(k) + " " + std::to_string((v = v * 1103515245u + 12345u) % 900000000u) + "\n";
  return s;
}

// Builds (once per size and shape) a tree of n cgroups under a temporary directory; returns its
// root. Flat: n - 1 siblings directly under the root (a delegated subtree's owner can make them).
const fs::path& tree(int n, bool flat = false) {
  static std::map<std::pair<int, bool>, fs::path> built;
  auto it = built.find({n, flat});
  if (it != built.end()) return it->second;
  const fs::path base = fs::exists("/dev/shm") ? fs::path("/dev/shm") : fs::temp_directory_path();
  fs::path root = base / ("reclaimd-bench-" + std::to_string(::getpid()) + "-" + std::to_string(n) + (flat ? "f" : ""));
  unsigned counter = 0;
  auto cgroup = [&](const fs::path& dir) {
    fs::create_directories(dir);
    for (const char* f : kControlFiles)
      std::ofstream(dir / f) << "0\n";
    std::ofstream(dir / "memory.stat") << memoryStat(++counter);
    std::ofstream(dir / "cpu.stat") << "usage_usec " << counter * 1000 << "\nuser_usec 1\nsystem_usec 1\n";
    std::ofstream(dir / "memory.reclaim");
  };
  cgroup(root);
  if (flat) {
    for (int i = 1; i < n; ++i)
      cgroup(root / ("cg" + std::to_string(i)));
    return built.emplace(std::make_pair(n, flat), root).first->second;
  }
  cgroup(root / "system.slice");
  cgroup(root / "system.slice" / "ssh.service");
  cgroup(root / "kubepods.slice");
  const int pods = (n - 4) / 4;
  for (int p = 0; p < pods; ++p) {
    const fs::path pod = root / "kubepods.slice" / ("pod" + std::to_string(p));
    cgroup(pod);
    for (int c = 0; c < 3; ++c)
      cgroup(pod / ("ctr" + std::to_string(c)));
  }
  return built.emplace(std::make_pair(n, flat), root).first->second;
}

struct Cleanup {
  ~Cleanup() {
    std::error_code ignored;
    for (const auto& e :
         fs::directory_iterator(fs::exists("/dev/shm") ? "/dev/shm" : fs::temp_directory_path(), ignored)) {
      if (e.path().filename().string().rfind("reclaimd-bench-" + std::to_string(::getpid()) + "-", 0) == 0) {
        fs::remove_all(e.path(), ignored);
      }
    }
  }
} cleanup;

// The engine's view of a fixture tree: an idle machine, the tree through the shell's Tracker.
class TreeSensors final : public controller::Sensors {
 public:
  explicit TreeSensors(controller::Tracker& tracker) : tracker_(tracker) { mem_.memTotal = 16 * kGiB; }
  void advance(std::chrono::nanoseconds d) { total_ += d; }

  Result<controller::CpuReading> cpu() override { return controller::CpuReading{std::chrono::nanoseconds(0), total_}; }
  std::chrono::nanoseconds ownCpu() override { return std::chrono::nanoseconds(0); }
  Result<proc::Meminfo> meminfo() override { return mem_; }
  Result<proc::Workingset> machineRefaults() override { return proc::Workingset{}; }
  Result<cgroup::Tree> tree(const cgroup::Descend& descend) override { return tracker_.walk(descend); }
  Result<controller::MemoryReading> memory(const controller::CgroupRef& ref) override {
    auto cg = tracker_.open(ref);
    if (!cg) return cg.error();
    auto stat = (*cg)->memoryStat();
    if (!stat) return stat.error();
    return controller::MemoryReading{stat->fileCache(), stat->workingsetRefaultFile, stat->workingsetActivateFile};
  }
  Result<std::chrono::nanoseconds> cgroupCpu(const controller::CgroupRef& ref) override {
    auto cg = tracker_.open(ref);
    if (!cg) return cg.error();
    auto stat = (*cg)->cpuStat();
    if (!stat) return stat.error();
    return stat->usage();
  }
  Result<std::uint64_t> pressureTotal(controller::ScopeId) override { return errnoError(ENOENT, "bench"); }
  Result<controller::CgroupCpuScan> cgroupCpuScan() override { return errnoError(ENOENT, "bench: an idle machine"); }

 private:
  controller::Tracker& tracker_;
  proc::Meminfo mem_;
  std::chrono::nanoseconds total_{0};
};

// The machine's side of a dry run's turn: it writes nothing, so the only commands are the
// scopes to watch, answered as watched by a trigger.
class WatchOnly final : public controller::Actuator {
 public:
  cgroup::ReclaimWrite reclaim(const controller::CgroupRef&, std::uint64_t, cgroup::ReclaimFormat) override {
    return cgroup::ReclaimWrite{};
  }
  Result<void> dropCaches() override { return {}; }
  Result<void> compact() override { return {}; }
  controller::Capabilities reprobe() override { return {}; }
  controller::Watched watch(const controller::WatchScope&) override {
    return controller::Watched{controller::PressureFeed::Trigger, "bench", false};
  }
  void unwatch(controller::ScopeId) override {}
  bool stopPending() override { return false; }
  std::vector<controller::ScopeEvent> pressureEvents() override { return {}; }
  void publish(Events events) override { benchmark::DoNotOptimize(events); }
};

// The pass's clock stands still: a turn's commands all happen at its time.
class StillClock final : public Clock {
 public:
  TimePoint now() const override { return at; }
  TimePoint at{};
};

// A turn as the daemon has it (runTurn, the same code), over the fixture tree.
void pass(controller::Engine& engine, controller::Sensors& sensors, TimePoint now) {
  static WatchOnly actuator;
  static StillClock clock;
  clock.at = now;
  benchmark::DoNotOptimize(controller::runTurn(engine, sensors, actuator, clock, now));
}

void BM_Pass(benchmark::State& state, const char* policyText, bool flat = false) {
  const int n = static_cast<int>(state.range(0));
  const fs::path& root = tree(n, flat);
  auto policy = policies::parsePolicy(policyText, "bench.yaml");
  if (!policy) {
    state.SkipWithError(policy.error().message().c_str());
    return;
  }
  controller::Tracker tracker(UniqueFd(::open(root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)));
  TreeSensors sensors(tracker);
  controller::Engine engine(*policy, controller::EngineSetup{true, ""});
  controller::Capabilities caps;
  caps.cgroupRoot = root.string();
  caps.memoryController = caps.reclaimWritable = caps.dropCaches = true;
  caps.swappinessKey = controller::KeySupport::Supported;
  engine.setCapabilities(caps, "bench");
  TimePoint now{};
  // Past every target's grace period, so each pass measures every pod's memory.stat too. The
  // slowest of these turns: the one that finds every target, or the one where they all turn
  // idle and each asks for its pressure watch.
  std::chrono::duration<double, std::milli> slowest{0};
  for (int i = 0; i < 30; ++i) {
    now += std::chrono::seconds(5);
    sensors.advance(std::chrono::seconds(5));
    const auto start = std::chrono::steady_clock::now();
    pass(engine, sensors, now);
    slowest = std::max<std::chrono::duration<double, std::milli>>(slowest, std::chrono::steady_clock::now() - start);
  }
  for (auto _ : state) {
    // A pass is what a turn that walks does: 5 s apart, each turn walks.
    now += std::chrono::seconds(5);
    sensors.advance(std::chrono::seconds(5));
    pass(engine, sensors, now);
  }
  // Every sibling of the flat tree; every pod and the disabled system.slice of the other.
  const std::size_t want = flat ? static_cast<std::size_t>(n - 1) : static_cast<std::size_t>((n - 4) / 4 + 1);
  if (engine.targets().size() != want)
    state.SkipWithError(
        ("targets: " + std::to_string(engine.targets().size()) + ", want " + std::to_string(want)).c_str());
  state.counters["cgroups"] = n;
  state.counters["targets"] = static_cast<double>(engine.targets().size());
  state.counters["slowest_turn_ms"] = slowest.count();
  // CPU time per cgroup per pass.
  state.counters["per_cgroup"] = benchmark::Counter(
      static_cast<double>(n), benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}

// The walk alone: directory reads and opens, the part that is kernel time.
void BM_Walk(benchmark::State& state, bool flat) {
  const int n = static_cast<int>(state.range(0));
  const int rootFd = ::open(tree(n, flat).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  std::size_t nodes = 0;
  for (auto _ : state) {
    auto walked = cgroup::walkTree(rootFd);
    if (walked) nodes = walked->nodes.size();
    benchmark::DoNotOptimize(walked);
  }
  if (nodes != static_cast<std::size_t>(n))
    state.SkipWithError(("walked " + std::to_string(nodes) + " cgroups of " + std::to_string(n)).c_str());
  state.counters["per_cgroup"] = benchmark::Counter(
      static_cast<double>(n), benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
  ::close(rootFd);
}

// The busy scan on a flat tree: one walk and a cpu.stat per cgroup, stopped at its bound.
void BM_BusyScanFlat(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  const int rootFd = ::open(tree(n, true).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  std::size_t read = 0;
  bool complete = true;
  for (auto _ : state) {
    auto scanned = controller::scanCgroupCpu(rootFd);
    if (scanned) {
      read = scanned->cgroups.size();
      complete = scanned->complete;
    }
    benchmark::DoNotOptimize(scanned);
  }
  // The scan stops at its bound and says it is incomplete.
  if (read != controller::kBusyScanMaxCgroups || complete)
    state.SkipWithError(("busy scan read " + std::to_string(read) + " cgroups, complete=" + std::to_string(complete) +
                         "; want its bound, incomplete").c_str());
  state.counters["read"] = static_cast<double>(read);
  ::close(rootFd);
}

BENCHMARK_CAPTURE(BM_Walk, pods, false)
    ->Arg(100)
    ->Arg(1000)
    ->Arg(10000)
    ->Unit(benchmark::kMicrosecond)
    ->MeasureProcessCPUTime();
// 10,000 siblings under one directory: one listing of them all.
BENCHMARK_CAPTURE(BM_Walk, flat, true)->Arg(10000)->Unit(benchmark::kMicrosecond)->MeasureProcessCPUTime();
BENCHMARK(BM_BusyScanFlat)->Arg(10000)->Unit(benchmark::kMicrosecond)->MeasureProcessCPUTime();
// every sibling a target: the turn that walks reads each one's cpu.stat and memory.stat
// (10,000 only in the full run: see the top)
BENCHMARK_CAPTURE(BM_Pass, flat, kPolicyFlat, true)
    ->Arg(1000)
    ->Arg(10000)
    ->Unit(benchmark::kMicrosecond)
    ->MeasureProcessCPUTime();
// rules naming the pods: the walk lists kubepods.slice and not below the pods
BENCHMARK_CAPTURE(BM_Pass, pods, kPolicy)
    ->Arg(100)
    ->Arg(1000)
    ->Arg(10000)
    ->Unit(benchmark::kMicrosecond)
    ->MeasureProcessCPUTime();
// a "**" rule as well: every cgroup listed
BENCHMARK_CAPTURE(BM_Pass, everywhere, kPolicyEverywhere)
    ->Arg(100)
    ->Arg(1000)
    ->Arg(10000)
    ->Unit(benchmark::kMicrosecond)
    ->MeasureProcessCPUTime();

// The console reporter, remembering whether a case reported an error (a check above failed).
class Checked final : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& r : runs) failed_ = failed_ || r.error_occurred;
    ConsoleReporter::ReportRuns(runs);
  }
  bool failed() const { return failed_; }

 private:
  bool failed_ = false;
};

}  // namespace
}  // namespace reclaimd

// Exit 1 when a case's check failed or no case matched the filter.
int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 2;
  reclaimd::Checked reporter;
  const std::size_t ran = benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
  return reporter.failed() || ran == 0 ? 1 : 0;
}

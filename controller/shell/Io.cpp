#include "controller/shell/Io.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <future>
#include <memory>
#include <system_error>
#include <thread>

#include "base/Clock.h"
#include "base/Event.h"
#include "base/Files.h"
#include "base/Log.h"
#include "controller/shell/BusyScan.h"

namespace reclaimd::controller {

using namespace std::chrono;

namespace {

// How long dropcache waits for sync before dropping what is clean.
constexpr nanoseconds kSyncWait = 2s;

}  // namespace

bool syncWithin(const std::function<void()>& sync, nanoseconds wait) {
  // One at a time: a sync stuck on a dead filesystem would otherwise leave one more thread stuck
  // beside it at every drop, without end. While it runs, the next drop waits for no sync.
  static std::atomic<bool> running{false};
  if (running.exchange(true)) return false;
  auto done = std::make_shared<std::promise<void>>();
  std::future<void> finished = done->get_future();
  // The daemon's signals stay blocked in this thread too (it inherits the mask).
  try {
    std::thread([done, sync] {
      sync();
      running = false;
      done->set_value();
    }).detach();
  } catch (const std::system_error&) {
    // No thread to be had (a tasks limit): the drop goes ahead unsynced, as after a slow sync.
    running = false;
    return false;
  }
  return finished.wait_for(wait) == std::future_status::ready;
}

Result<CpuReading> SystemSensors::cpu() {
  auto times = proc_.stat();
  if (!times) return times.error();
  auto time = proc::cpuTime(*times, tick_);
  if (!time) return time.error();
  return CpuReading{time->busy, time->total, time->cpus};
}

nanoseconds SystemSensors::ownCpu() {
  return processCpuTime();
}

Result<cgroup::Tree> SystemSensors::tree(const cgroup::Descend& descend) {
  if (!tracker_) return errnoError(ENOENT, "no cgroup tree in use");
  return tracker_->walk(descend);
}

Result<cgroup::Cgroup*> SystemSensors::open(const CgroupRef& ref) {
  if (!tracker_) return errnoError(ENOENT, "no cgroup tree in use");
  return tracker_->open(ref);
}

Result<MemoryReading> SystemSensors::memory(const CgroupRef& ref) {
  auto cg = open(ref);
  if (!cg) return cg.error();
  auto stat = (*cg)->memoryStat();
  if (!stat) return stat.error();
  return MemoryReading{stat->fileCache(), stat->workingsetRefaultFile, stat->workingsetActivateFile};
}

Result<nanoseconds> SystemSensors::cgroupCpu(const CgroupRef& ref) {
  auto cg = open(ref);
  if (!cg) return cg.error();
  auto stat = (*cg)->cpuStat();
  if (!stat) return stat.error();
  return stat->usage();  // checked: a counter near 2^64 is an error, not signed overflow
}

Result<CgroupCpuScan> SystemSensors::cgroupCpuScan() {
  if (!tracker_) return errnoError(ENOENT, "no cgroup tree in use");
  return scanCgroupCpu(tracker_->rootFd());
}

cgroup::ReclaimWrite SystemActuator::reclaim(const CgroupRef& ref, std::uint64_t bytes, cgroup::ReclaimFormat format) {
  // A refused file (a symlink planted as memory.reclaim) has no errno: it fails as what it is.
  auto fail = [](Error e) { return cgroup::ReclaimWrite{std::move(e), nanoseconds(0)}; };
  if (!tracker_) return fail(errnoError(ENOENT, "no cgroup tree in use"));
  auto cg = tracker_->open(ref);
  if (!cg) return fail(cg.error());
  // Opened for each request and closed after: an fd per target kept open would put a busy
  // node's thousands of cgroups past the fd limit.
  auto file = (*cg)->openReclaim();
  if (!file) return fail(file.error());
  return file->write(bytes, format);
}

Result<void> SystemActuator::dropCaches() {
  // Dirty pages are not dropped, so sync first; after the grace period there are few and it is
  // short. After kSyncWait caches are dropped without it (what is still dirty simply stays).
  if (!syncWithin([] { ::sync(); }, kSyncWait)) {
    emit(Event(Severity::Warn, "sync_slow")
             .ms("waited_ms", kSyncWait)
             .add("reason", "a filesystem is slow to sync; dropping what is clean"));
  }
  return writeFileAt(AT_FDCWD, paths_.proc(kDropCaches), "3");
}

Result<void> SystemActuator::compact() {
  return writeFileAt(AT_FDCWD, paths_.proc(kCompactMemory), "1");
}

}  // namespace reclaimd::controller

#include "tests/unit/SimMachine.h"

#include <algorithm>
#include <cerrno>

namespace reclaimd::testing {

using namespace std::chrono;

namespace {

std::string parentOf(const std::string& path) {
  const auto slash = path.rfind('/');
  return slash == std::string::npos ? "" : path.substr(0, slash);
}

bool inside(const std::string& path, const std::string& ancestor) {
  return ancestor.empty() || path == ancestor ||
         (path.size() > ancestor.size() && path.compare(0, ancestor.size(), ancestor) == 0 &&
          path[ancestor.size()] == '/');
}

}  // namespace

Capabilities fullCapabilities() {
  Capabilities c;
  c.cgroupRoot = "/sys/fs/cgroup";
  c.memoryController = true;
  c.reclaimWritable = true;
  c.swappinessKey = controller::KeySupport::Supported;
  c.psiAvailable = true;
  c.psiTriggers = true;
  c.compactMemory = true;
  c.dropCaches = true;
  return c;
}

SimMachine::SimMachine(ManualClock& clock, std::uint64_t memTotal, int cpus)
    : clock_(clock), memTotal_(memTotal), cpus_(cpus), last_(clock.now()) {
  cgroups_[""] = SimCgroup{1};
  caps_ = fullCapabilities();
}

void SimMachine::addCgroup(const std::string& path, std::uint64_t fileBytes) {
  SimCgroup c;
  c.inode = nextInode_++;
  c.file = fileBytes;
  cgroups_[path] = c;
}

void SimMachine::removeCgroup(const std::string& path) {
  for (auto it = cgroups_.begin(); it != cgroups_.end();)
    it = inside(it->first, path) && !path.empty() ? cgroups_.erase(it) : std::next(it);
}

std::uint64_t SimMachine::subtreeFile(const std::string& path) const {
  std::uint64_t sum = 0;
  for (const auto& [p, c] : cgroups_)
    if (inside(p, path)) sum += c.file;
  return sum;
}

void SimMachine::advance() {
  const TimePoint now = clock_.now();
  if (now <= last_) return;
  const nanoseconds d = now - last_;
  last_ = now;
  const double seconds = duration<double>(d).count();
  busy_ += nanoseconds(static_cast<std::int64_t>(static_cast<double>(d.count()) * machineBusy_));
  total_ += d * cpus_;
  machineStallUsec_ += static_cast<std::uint64_t>(machineStallShare_ * seconds * 1e6);
  for (auto& [path, c] : cgroups_) {
    const double share = c.cpuShare + (!chargeTo_.empty() && path == chargeTo_ ? machineBusy_ : 0);
    c.usage += nanoseconds(static_cast<std::int64_t>(static_cast<double>(d.count()) * share));
    c.stallUsec += static_cast<std::uint64_t>(c.stallShare * seconds * 1e6);
    arrive(c, seconds);
    // The work reads its hot set at every multiple of rereadEvery: taken since, it is read back then.
    if (c.rereadEvery > nanoseconds(0) &&
        (now.time_since_epoch() / c.rereadEvery) == ((now - d).time_since_epoch() / c.rereadEvery))
      continue;
    c.file += c.readBack;
    std::uint64_t back = std::exchange(c.readBack, 0);
    const std::uint64_t level = c.file + c.arriving;
    if (level < c.hot) {
      if (c.readTakes > nanoseconds(0)) {
        c.arriving += c.hot - level;
        c.arrivingPerSecond = static_cast<double>(c.arriving) / duration<double>(c.readTakes).count();
      } else {
        back += c.hot - c.file;
        c.file = c.hot;
      }
    }
    readBackNow(c, back);
  }
}

void SimMachine::readBackNow(SimCgroup& c, std::uint64_t bytes) {
  c.refaults += bytes / 4096;
  if (c.activates) c.activations += bytes / 4096;
}

// What a read in progress brings in over `seconds`, counted as it comes.
void SimMachine::arrive(SimCgroup& c, double seconds) {
  if (c.arriving == 0) return;
  const auto in = std::min(c.arriving, static_cast<std::uint64_t>(c.arrivingPerSecond * seconds));
  c.arriving -= in;
  c.file += in;
  readBackNow(c, in);
}

bool SimMachine::cgroupsStill() const {
  if (!chargeTo_.empty() && machineBusy_ > 0) return false;
  for (const auto& [path, c] : cgroups_)
    if (c.cpuShare > 0 || c.stallShare > 0 || c.file < c.hot) return false;
  return true;
}

std::optional<Error> SimMachine::fault(const std::string& what) {
  ++reads[what];
  auto it = readFaults_.find(what);
  if (it == readFaults_.end() || it->second.second <= 0) return std::nullopt;
  --it->second.second;
  return errnoError(it->second.first, "injected " + what);
}

const SimCgroup* SimMachine::find(const CgroupRef& ref) const {
  auto it = cgroups_.find(std::string(ref.path));
  if (it == cgroups_.end() || (ref.inode != 0 && it->second.inode != ref.inode)) return nullptr;
  return &it->second;
}

Result<controller::CpuReading> SimMachine::cpu() {
  advance();
  if (auto f = fault("cpu")) return *f;
  return controller::CpuReading{busy_, total_, static_cast<unsigned>(cpus_)};
}

Result<proc::Meminfo> SimMachine::meminfo() {
  advance();
  if (auto f = fault("meminfo")) return *f;
  proc::Meminfo m;
  m.memTotal = memTotal_;
  m.inactiveFile = subtreeFile("");
  m.memFree = memTotal_ - std::min(memTotal_, m.inactiveFile);
  return m;
}

Result<proc::Workingset> SimMachine::machineRefaults() {
  advance();
  if (auto f = fault("vmstat")) return *f;
  proc::Workingset sum;
  for (const auto& [p, c] : cgroups_) {
    sum.refaults += c.refaults;
    sum.activations += c.activations;
  }
  return sum;
}

Result<cgroup::Tree> SimMachine::tree(const cgroup::Descend& descend) {
  if (auto f = fault("tree")) return *f;
  ++walks;
  cgroup::Tree t;
  std::map<std::string, int> index;
  // std::map orders "a" < "a/b" < "a/c" < "b": pre-order, parents first.
  for (const auto& [path, c] : cgroups_) {
    cgroup::TreeNode n;
    n.name = path.substr(path.rfind('/') + 1);
    n.inode = c.inode;
    if (!path.empty()) {
      auto parent = index.find(parentOf(path));
      if (parent == index.end()) continue;  // below an unlisted cgroup: not seen, as in cgroup::walkTree
      n.parent = parent->second;
      if (t.nodes[static_cast<std::size_t>(n.parent)].unlisted) continue;
    }
    n.unlisted = !path.empty() && descend && !descend(path);
    index[path] = static_cast<int>(t.nodes.size());
    if (n.parent >= 0) t.nodes[static_cast<std::size_t>(n.parent)].children.push_back(index[path]);
    t.nodes.push_back(n);
  }
  listed = 0;
  for (const cgroup::TreeNode& n : t.nodes)
    listed += n.unlisted ? 0 : 1;
  return t;
}

Result<controller::MemoryReading> SimMachine::memory(const CgroupRef& ref) {
  advance();
  if (auto f = fault("memory")) return *f;
  if (!find(ref)) return errnoError(ENOENT, "gone");
  controller::MemoryReading m{subtreeFile(std::string(ref.path)), 0, 0};
  for (const auto& [p, c] : cgroups_) {
    if (!inside(p, std::string(ref.path))) continue;
    m.refaults += c.refaults;
    m.activations += c.activations;
  }
  return m;
}

Result<nanoseconds> SimMachine::cgroupCpu(const CgroupRef& ref) {
  advance();
  if (auto f = fault("cpu.stat")) return *f;
  if (!find(ref)) return errnoError(ENOENT, "gone");
  nanoseconds sum{0};
  for (const auto& [p, c] : cgroups_)
    if (inside(p, std::string(ref.path))) sum += c.usage;
  return sum;
}

Result<controller::CgroupCpuScan> SimMachine::cgroupCpuScan() {
  advance();
  if (auto f = fault("scan")) return *f;
  controller::CgroupCpuScan scan;
  for (const auto& [path, c] : cgroups_) {
    nanoseconds sum{0};  // cpu.stat counts the subtree
    for (const auto& [p, d] : cgroups_)
      if (inside(p, path)) sum += d.usage;
    scan.cgroups.push_back({path, c.inode, sum});
  }
  return scan;
}

Result<std::uint64_t> SimMachine::pressureTotal(ScopeId scope) {
  advance();
  if (auto f = fault("pressure")) return *f;
  if (scope == controller::kMachineScope) return machineStallUsec_;
  // The scope's cgroup as the engine named it when it said to watch it.
  auto watched = watching.find(scope);
  if (watched == watching.end()) return errnoError(ENOENT, "no pressure file for this scope");
  const CgroupRef ref{watched->second.path, watched->second.inode};
  if (!find(ref)) return errnoError(ENOENT, "gone");
  return cgroups_.at(watched->second.path).stallUsec;
}

// Reclaims `bytes` from the subtree of `path`: its own cache first, then its children's.
std::uint64_t SimMachine::take(const std::string& path, std::uint64_t bytes) {
  std::uint64_t taken = 0;
  for (auto& [p, c] : cgroups_) {
    if (!inside(p, path) || taken >= bytes) continue;
    const std::uint64_t contact = std::min({c.unlearned, c.file, bytes - taken});
    c.unlearned -= contact;
    c.readBack += contact;
    c.file -= contact;
    taken += contact;
    const std::uint64_t got = std::min(c.file - std::min(c.file, c.pinned), bytes - taken);
    c.file -= got;
    taken += got;
  }
  return taken;
}

cgroup::ReclaimWrite SimMachine::reclaim(const CgroupRef& ref, std::uint64_t bytes, cgroup::ReclaimFormat) {
  advance();
  if (beforeWrite && find(ref)) beforeWrite(std::string(ref.path), bytes);
  writes_.push_back(Write{clock_.now(), std::string(ref.path), bytes});
  clock_.advance(writeTime_);
  advance();
  // The writer's memstall is charged to its cgroup, and so to the machine's total.
  machineStallUsec_ += static_cast<std::uint64_t>(duration_cast<microseconds>(writeTime_).count());
  if (!find(ref)) return cgroup::reclaimWritten(ENOENT, writeTime_, std::string(ref.path) + "/memory.reclaim");
  if (!faults_.empty()) {
    const auto [status, err] = faults_.front();
    faults_.pop_front();
    if (status == cgroup::ReclaimStatus::Partial) take(std::string(ref.path), bytes / 2);
    return cgroup::reclaimWritten(err, writeTime_, std::string(ref.path) + "/memory.reclaim");
  }
  const auto want = static_cast<std::uint64_t>(static_cast<double>(bytes) * overshoot_);
  const std::uint64_t got = take(std::string(ref.path), want);
  if (got < bytes) return cgroup::reclaimWritten(EAGAIN, writeTime_, std::string(ref.path) + "/memory.reclaim");
  return cgroup::reclaimWritten(0, writeTime_, std::string(ref.path) + "/memory.reclaim");
}

Result<void> SimMachine::dropCaches() {
  for (auto& [p, c] : cgroups_)
    c.file = 0;
  return {};
}

Result<void> SimMachine::compact() {
  return {};
}

void SimMachine::pressureFires(const std::string& path, bool gone) {
  for (const auto& [id, scope] : watching)
    if (scope.path == path) events_.push_back({id, gone, std::nullopt});
}

int runUntil(controller::Engine& engine, SimMachine& sim, ManualClock& clock, TimePoint until,
             const std::function<bool()>& stop, controller::DecideLog* log) {
  int turns = 0;
  while (clock.now() < until) {
    // Trigger events pending now reach the engine with the timer's turn, before its readings.
    const TimePoint wake = controller::runTurn(engine, sim, sim, clock, clock.now(), log);
    ++turns;
    if (stop && stop()) break;
    clock.set(std::min(wake, until));
    if (wake >= until) break;
  }
  return turns;
}

}  // namespace reclaimd::testing

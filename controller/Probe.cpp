#include "controller/Probe.h"

#include <fcntl.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <cstring>
#include <nlohmann/json.hpp>

#include "base/Files.h"
#include "cgroup/ControlFiles.h"
#include "cgroup/Controllers.h"
#include "cgroup/Libcgroup.h"
#include "cgroup/Mountinfo.h"
#include "cgroup/Reclaim.h"
#include "proc/Meminfo.h"
#include "psi/Pressure.h"
#include "psi/Trigger.h"

namespace reclaimd::controller {

std::string findCgroupRoot(const Paths& paths, std::string& problem) {
  if (!paths.cgroupRoot.empty()) return paths.cgroupRoot;
  auto text = readFileAt(AT_FDCWD, paths.proc(kProcMountinfo));
  if (!text) {
    problem = text.error().message();
    return {};
  }
  auto mounts = cgroup::parseMountinfo(*text);
  if (!mounts) {
    problem = mounts.error().message();
    return {};
  }
  auto found = cgroup::findCgroup2(*mounts);
  if (!found) {
    problem = "no cgroup2 filesystem is mounted";
    return {};
  }
  return found->mountPoint;
}

namespace {

void probeCgroup(const Paths& paths, Capabilities& caps) {
  caps.cgroupRoot = findCgroupRoot(paths, caps.cgroupProblem);
  if (caps.cgroupRoot.empty()) {
    caps.reclaimProblem = "no cgroup2 hierarchy";
    return;
  }
  auto dir = openAt(AT_FDCWD, caps.cgroupRoot, O_RDONLY | O_DIRECTORY);
  if (!dir) {
    caps.cgroupProblem = dir.error().message();
    caps.reclaimProblem = "cgroup2 root not usable";
    return;
  }
  auto controllers = readFileAt(dir->get(), cgroup::kControllers);
  if (!controllers) {
    caps.cgroupProblem = caps.cgroupRoot + ": " + controllers.error().message();
  } else {
    caps.memoryController = cgroup::hasController(*controllers, "memory");
    if (!caps.memoryController) {
      caps.cgroupProblem = "the memory controller is not on the cgroup2 hierarchy at " + caps.cgroupRoot +
                           " (a hybrid mount keeps it on cgroup v1)";
    }
  }
  auto file = cgroup::ReclaimFile::open(dir->get(), caps.cgroupRoot);
  if (!file) {
    caps.reclaimProblem = file.error().message();
    return;
  }
  auto plain = file->probe(cgroup::ReclaimFormat::Plain);
  if (!plain.result) {
    caps.reclaimProblem = "a zero-byte request failed: " + plain.result.error().message();
    return;
  }
  caps.reclaimWritable = true;
  auto keyed = file->probe(cgroup::ReclaimFormat::SwappinessZero);
  switch (keyed.status()) {
    case cgroup::ReclaimStatus::Done: caps.swappinessKey = KeySupport::Supported; break;
    case cgroup::ReclaimStatus::Unsupported: caps.swappinessKey = KeySupport::Unsupported; break;
    case cgroup::ReclaimStatus::Partial:
    case cgroup::ReclaimStatus::Gone:
    case cgroup::ReclaimStatus::Interrupted:
    case cgroup::ReclaimStatus::Failed: caps.swappinessKey = KeySupport::Unknown; break;
  }
}

// Registers `spec` and asks epoll to wait on it: both must work for events (a regular file
// accepts the write but epoll refuses it: EPERM). Closing the fd removes the trigger.
Result<void> tryTrigger(int dirFd, const std::string& name, const psi::TriggerSpec& spec) {
  auto trigger = psi::Trigger::open(dirFd, name, spec);
  if (!trigger) return trigger.error();
  UniqueFd epoll(::epoll_create1(EPOLL_CLOEXEC));
  epoll_event ev{};
  ev.events = EPOLLPRI;
  if (!epoll || ::epoll_ctl(epoll.get(), EPOLL_CTL_ADD, trigger->fd(), &ev) != 0)
    return errnoError(errno, "epoll cannot wait on " + name);
  return {};
}

// The trigger the daemon registers on the machine's pressure (shell/PressureIo.cpp): the proc
// root's pressure file, else the root cgroup's memory.pressure.
void probeTriggers(const Paths& paths, const psi::TriggerSpec& spec, Capabilities& caps) {
  const std::string proc = paths.proc(kProcPressureMemory);
  caps.psiTrigger = psi::triggerText(spec) + " on " + proc;
  auto onProc = tryTrigger(AT_FDCWD, proc, spec);
  if (onProc) {
    caps.psiTriggers = true;
    return;
  }
  caps.psiTriggerProblem = onProc.error().message();
  if (caps.cgroupRoot.empty()) return;
  auto dir = openAt(AT_FDCWD, caps.cgroupRoot, O_RDONLY | O_DIRECTORY);
  if (!dir || !tryTrigger(dir->get(), cgroup::kMemoryPressure, spec)) return;
  caps.psiTriggers = true;
  caps.psiTrigger = psi::triggerText(spec) + " on the root cgroup's " + cgroup::kMemoryPressure + " (none on " + proc +
                    ": " + caps.psiTriggerProblem + ")";
  caps.psiTriggerProblem.clear();
}

// Whether `path` opens for writing (a regular file only: never a symlink planted in its place).
Result<void> openableForWrite(const std::string& path) {
  auto fd = openRegular(AT_FDCWD, path, O_WRONLY);
  if (!fd) return fd.error();
  return {};
}

// SwapTotal from /proc/meminfo. A machine whose meminfo cannot be read is taken to have no
// swap, and describe() says why that is a guess.
void probeSwap(const Paths& paths, Capabilities& caps) {
  auto text = readFileAt(AT_FDCWD, paths.proc(kProcMeminfo));
  if (!text) {
    caps.swapProblem = text.error().message();
    return;
  }
  auto mem = proc::parseMeminfo(*text);
  if (!mem) {
    caps.swapProblem = mem.error().message();
    return;
  }
  caps.swapActive = mem->swapTotal > 0;
}

}  // namespace

Result<void> checkCgroupRoot(const std::string& path) {
  auto dir = openAt(AT_FDCWD, path, O_RDONLY | O_DIRECTORY);
  if (!dir) return Error{dir.error().code, "--cgroup-root " + path + ": not a usable directory"};
  auto controllers = openAt(dir->get(), cgroup::kControllers, O_RDONLY | O_NONBLOCK);
  if (!controllers) {
    return Error{controllers.error().code,
                 "--cgroup-root " + path + ": not a cgroup2 root (no " + std::string(cgroup::kControllers) + ")"};
  }
  return {};
}

psi::TriggerSpec machineTrigger(const policies::PressureSettings& pressure) {
  return psi::TriggerSpec{pressure.stall, pressure.window};
}

Capabilities probe(const Paths& paths, const psi::TriggerSpec& trigger) {
  Capabilities caps;
  // Never fails on Linux; a nonsense answer leaves the 4 KiB of x86-64.
  if (const long page = ::sysconf(_SC_PAGESIZE); page > 0) caps.pageBytes = static_cast<std::uint64_t>(page);
  probeCgroup(paths, caps);

  probeSwap(paths, caps);
  auto pressure = readFileAt(AT_FDCWD, paths.proc(kProcPressureMemory));
  if (!pressure) {
    caps.psiProblem = pressure.error().message() + " (Debian kernels need psi=1 on the command line)";
  } else if (auto parsed = psi::parsePressure(*pressure); !parsed) {
    caps.psiProblem = parsed.error().message();
  } else {
    caps.psiAvailable = true;
    probeTriggers(paths, trigger, caps);
  }
  auto compact = openableForWrite(paths.proc(kCompactMemory));
  caps.compactMemory = compact.ok();
  if (!compact) caps.compactProblem = compact.error().message();
  auto drop = openableForWrite(paths.proc(kDropCaches));
  caps.dropCaches = drop.ok();
  if (!drop) caps.dropCachesProblem = drop.error().message();
  // Read-only /proc/sys is a container's; a plain refusal as another user is only the user.
  if (!drop && drop.error().code == std::errc::permission_denied && ::geteuid() != 0)
    caps.dropCachesProblem += "; run as root";
  if (paths.procRoot == "/proc") {
    if (auto mounts = cgroup::libcgroupMounts()) {
      for (const auto& m : *mounts) {
        if (m.controller == "memory") caps.libcgroupMemory = m.path;
      }
      if (caps.libcgroupMemory.empty()) caps.libcgroupMemory = "not mounted";
    } else {
      caps.libcgroupMemory = mounts.error().message();
    }
  }
  return caps;
}

std::string describe(const Capabilities& caps) {
  auto yesNo = [](bool b) { return b ? "yes" : "no"; };
  std::string out;
  auto line = [&](const char* key, const std::string& value, const std::string& problem = {}) {
    out += key;
    out += ": ";
    out += value;
    if (!problem.empty()) out += " (" + problem + ")";
    out += "\n";
  };
  line("cgroup2_root", caps.cgroupRoot.empty() ? "none" : caps.cgroupRoot,
       caps.cgroupRoot.empty() ? caps.cgroupProblem : "");
  line("memory_controller", yesNo(caps.memoryController), caps.memoryController ? "" : caps.cgroupProblem);
  line("memory_reclaim", caps.reclaimWritable ? "writable" : "unavailable", caps.reclaimProblem);
  const char* key = caps.swappinessKey == KeySupport::Supported     ? "yes"
                    : caps.swappinessKey == KeySupport::Unsupported ? "no (kernel before 6.11)"
                                                                    : "unknown";
  line("swappiness_key", key);
  line("swap_active", yesNo(caps.swapActive), caps.swapProblem);
  line("page_size", std::to_string(caps.pageBytes));
  line("psi", yesNo(caps.psiAvailable), caps.psiProblem);
  if (caps.psiAvailable) {
    line("psi_triggers", caps.psiTriggers ? "yes" : "no, pressure is read every sample instead",
         caps.psiTriggers ? caps.psiTrigger : caps.psiTrigger + ": " + caps.psiTriggerProblem);
  }
  line("compact_memory", yesNo(caps.compactMemory), caps.compactProblem);
  line("drop_caches", caps.dropCaches ? "writable" : "unavailable", caps.dropCachesProblem);
  if (!caps.libcgroupMemory.empty()) {
    const bool v1 =
        !caps.cgroupRoot.empty() && caps.libcgroupMemory.front() == '/' && caps.libcgroupMemory != caps.cgroupRoot;
    line("libcgroup_memory_mount", caps.libcgroupMemory + (v1 ? " (cgroup v1: no memory.reclaim there)" : ""));
  }
  return out;
}

nlohmann::json describeJson(const Capabilities& caps) {
  using nlohmann::json;
  auto text = [](const std::string& s) { return s.empty() ? json(nullptr) : json(s); };
  json out{{"cgroup2_root", text(caps.cgroupRoot)},
           {"memory_controller", caps.memoryController},
           {"memory_reclaim", caps.reclaimWritable},
           {"swappiness_key", caps.swappinessKey == KeySupport::Supported     ? json(true)
                              : caps.swappinessKey == KeySupport::Unsupported ? json(false)
                                                                              : json(nullptr)},
           {"swap_active", caps.swapActive},
           {"page_size", caps.pageBytes},
           {"psi", caps.psiAvailable},
           {"psi_triggers", caps.psiTriggers},
           {"psi_trigger", text(caps.psiTrigger)},
           {"compact_memory", caps.compactMemory},
           {"drop_caches", caps.dropCaches},
           {"libcgroup_memory_mount", text(caps.libcgroupMemory)}};
  const std::pair<const char*, const std::string*> problems[] = {{"cgroup2_root_problem", &caps.cgroupProblem},
                                                                 {"memory_reclaim_problem", &caps.reclaimProblem},
                                                                 {"swap_active_problem", &caps.swapProblem},
                                                                 {"psi_problem", &caps.psiProblem},
                                                                 {"psi_triggers_problem", &caps.psiTriggerProblem},
                                                                 {"compact_memory_problem", &caps.compactProblem},
                                                                 {"drop_caches_problem", &caps.dropCachesProblem}};
  for (const auto& [key, problem] : problems) {
    if (!problem->empty()) out[key] = *problem;
  }
  return out;
}

}  // namespace reclaimd::controller

#include "controller/shell/PressureIo.h"

#include <fcntl.h>

#include <algorithm>

#include "cgroup/ControlFiles.h"
#include "cgroup/Reclaim.h"

namespace reclaimd::controller {

psi::Source PressureIo::openMachine(const psi::TriggerSpec& spec, Tracker* tracker, std::string& how) {
  const std::string path = procRoot_ + "/pressure/memory";
  psi::Source source = psi::Source::open(AT_FDCWD, path, spec);
  how = path;
  // The root cgroup's memory.pressure carries the same system-wide figures; where /proc takes no
  // trigger (a container's read-only /proc: EROFS) the host's cgroup tree may.
  if (auto onProc = source.trigger(); !onProc && tracker) {
    psi::Source viaRoot = psi::Source::open(tracker->rootFd(), cgroup::kMemoryPressure, spec);
    if (viaRoot.trigger()) {
      how = "the root cgroup's memory.pressure (no trigger on /proc: " + onProc.error().message() + ")";
      return viaRoot;
    }
  }
  return source;
}

Watched PressureIo::watched(ScopeId id, psi::Source& source, std::string how, bool gone) {
  if (auto readable = source.readable(); !readable) return Watched{PressureFeed::Off, readable.error().message(), gone};
  if (source.trigger()) {
    if (auto added = watch_.add(source, id); !added) {
      // Refused by epoll, the scope's totals are polled instead, and the engine says why.
      source.dropTrigger(added.error());
    }
  }
  auto trigger = source.trigger();
  if (trigger) return Watched{PressureFeed::Trigger, std::move(how), false};
  return Watched{PressureFeed::Polling, trigger.error().message(), false};
}

Watched PressureIo::watch(const WatchScope& s, Tracker* tracker) {
  sources_.erase(s.id);  // closing the fd removes the trigger
  std::string how;
  psi::Source source = psi::Source::failed(errnoError(ENOENT, "no cgroup tree in use"));
  bool gone = false;  // a cgroup removed meanwhile: no warning, the walk drops its target
  if (s.id == kMachineScope) {
    source = openMachine(s.trigger, tracker, how);
  } else if (tracker) {
    auto cg = tracker->open(CgroupRef{s.path, s.inode});
    if (cg) {
      source = psi::Source::open((*cg)->dirFd(), cgroup::kMemoryPressure, s.trigger);
    } else {
      source = psi::Source::failed(cg.error());
      gone = cgroup::cgroupGone(cg.error());
    }
    how = s.path + "/memory.pressure";
  }
  auto [placed, inserted] = sources_.emplace(s.id, std::move(source));
  return watched(s.id, placed->second, std::move(how), gone);
}

Result<std::uint64_t> PressureIo::total(ScopeId id) {
  auto it = sources_.find(id);
  if (it == sources_.end()) return errnoError(ENOENT, "no pressure file for this scope");
  return it->second.someTotal();
}

std::vector<ScopeEvent> PressureIo::take() {
  std::vector<ScopeEvent> out;
  for (const psi::WatchEvent& e : watch_.take()) {
    if (e.gone) {
      // A removed cgroup's trigger: totals only from now on (the engine walks again).
      if (auto it = sources_.find(e.id); it != sources_.end())
        it->second.dropTrigger(errnoError(ENODEV, "cgroup removed"));
    }
    out.push_back(ScopeEvent{e.id, e.gone, std::nullopt});  // its total: read as drive takes it
  }
  return out;
}

}  // namespace reclaimd::controller

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
  if (source.triggerFd() < 0 && tracker) {
    psi::Source viaRoot = psi::Source::open(tracker->rootFd(), cgroup::kMemoryPressure, spec);
    if (viaRoot.triggerFd() >= 0) {
      how = "the root cgroup's memory.pressure (no trigger on /proc: " + source.why() + ")";
      return viaRoot;
    }
  }
  return source;
}

void PressureIo::watch(Engine& engine, ScopeId id, psi::Source& source, std::string how, bool gone) {
  if (!source.readable()) {
    engine.setWatch(id, Watch::Off, source.why(), gone);
    return;
  }
  if (source.triggerFd() >= 0) {
    if (auto added = watch_.add(source, id); !added) {
      // EPERM: not something epoll can wait on (a regular file in a test fixture).
      source.dropTrigger(added.error().message());
    }
  }
  if (source.triggerFd() >= 0)
    engine.setWatch(id, Watch::Trigger, std::move(how));
  else
    engine.setWatch(id, Watch::Polling, source.why());
}

void PressureIo::sync(Engine& engine, Tracker* tracker) {
  const auto scopes = engine.scopes();
  for (auto it = sources_.begin(); it != sources_.end();) {
    const bool wanted =
        std::any_of(scopes.begin(), scopes.end(), [&](const Engine::ScopeView& s) { return s.id == it->first; });
    it = wanted ? std::next(it) : sources_.erase(it);  // closing the fd removes the trigger
  }
  for (const Engine::ScopeView& s : scopes) {
    if (sources_.count(s.id)) continue;
    std::string how;
    psi::Source source;
    bool gone = false;  // a cgroup removed meanwhile: no warning, the walk drops its target
    if (s.id == kMachineScope) {
      source = openMachine(s.trigger, tracker, how);
    } else if (tracker) {
      auto cg = tracker->open(CgroupRef{s.cgroupPath, s.inode});
      if (cg) {
        source = psi::Source::open((*cg)->dirFd(), cgroup::kMemoryPressure, s.trigger);
      } else {
        source.dropTrigger(cg.error().message());
        gone = cgroup::cgroupGone(cg.error());
      }
      how = s.cgroupPath + "/memory.pressure";
    }
    auto [placed, inserted] = sources_.emplace(s.id, std::move(source));
    watch(engine, s.id, placed->second, std::move(how), gone);
  }
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
      if (auto it = sources_.find(e.id); it != sources_.end()) it->second.dropTrigger("cgroup removed");
    }
    out.push_back(ScopeEvent{e.id, e.gone});
  }
  return out;
}

}  // namespace reclaimd::controller

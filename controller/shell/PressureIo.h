// The pressure files of the engine's scopes: opened when the engine says to watch a scope, closed
// when it says to forget one; triggers registered in one epoll set; totals read on request.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "base/Result.h"
#include "controller/engine/Commands.h"
#include "controller/shell/Tracker.h"
#include "psi/Watch.h"

namespace reclaimd::controller {

class PressureIo {
 public:
  explicit PressureIo(std::string procRoot) : procRoot_(std::move(procRoot)) {}

  // The epoll fd that is readable when a trigger fired (nested in the daemon's loop).
  int fd() const { return watch_.fd(); }
  // Opens the scope's file (closing any it had open) and answers how it is watched. `tracker`
  // may be null (no cgroup tree: dropcache, disabled).
  Watched watch(const WatchScope& scope, Tracker* tracker);
  // Closes the scope's file (which removes its trigger).
  void unwatch(ScopeId id) { sources_.erase(id); }
  Result<std::uint64_t> total(ScopeId id);
  std::vector<ScopeEvent> take();

 private:
  psi::Source openMachine(const psi::TriggerSpec& spec, Tracker* tracker, std::string& how);
  Watched watched(ScopeId id, psi::Source& source, std::string how, bool gone);

  std::string procRoot_;
  std::map<ScopeId, psi::Source> sources_;
  psi::Watch watch_;
};

}  // namespace reclaimd::controller

// The pressure files of the engine's scopes: opened when the engine makes a scope, closed when
// it drops one; triggers registered in one epoll set; totals read on the engine's request.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "base/Result.h"
#include "controller/engine/Engine.h"
#include "controller/shell/Tracker.h"
#include "controller/shell/Turn.h"
#include "psi/Watch.h"

namespace reclaimd::controller {

class PressureIo {
 public:
  explicit PressureIo(std::string procRoot) : procRoot_(std::move(procRoot)) {}

  // The epoll fd that is readable when a trigger fired (nested in the daemon's loop).
  int fd() const { return watch_.fd(); }
  // Opens what the engine's scopes need and closes the rest; tells the engine how each new one
  // is watched. `tracker` may be null (no cgroup tree: dropcache, disabled).
  void sync(Engine& engine, Tracker* tracker);
  Result<std::uint64_t> total(ScopeId id);
  std::vector<ScopeEvent> take();
  // Forgets every scope (a reload makes them again with new settings).
  void clear() { sources_.clear(); }

 private:
  psi::Source openMachine(const psi::TriggerSpec& spec, Tracker* tracker, std::string& how);
  void watch(Engine& engine, ScopeId id, psi::Source& source, std::string how, bool gone = false);

  std::string procRoot_;
  std::map<ScopeId, psi::Source> sources_;
  psi::Watch watch_;
};

}  // namespace reclaimd::controller

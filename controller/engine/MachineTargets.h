// The targets the machine-wide settings govern, and the one a cgroup lies in: where quiet units
// (EngineUnits.cpp) and the cgroups probes aim at (EngineAim.cpp) are looked for.
#pragma once

#include <string_view>
#include <unordered_map>
#include <vector>

#include "controller/engine/CgroupPaths.h"
#include "controller/engine/TargetState.h"

namespace reclaimd::controller {

// The targets the machine-wide settings govern, in gradual mode, by path (an index into `in`).
inline std::unordered_map<std::string_view, int> machineTargets(const std::vector<TargetState>& in) {
  std::unordered_map<std::string_view, int> byPath;
  for (std::size_t i = 0; i < in.size(); ++i) {
    const TargetState& t = in[i];
    if (!t.unit && !t.gone && t.gov.rule < 0 && t.gov.mode == policies::Mode::Gradual)
      byPath.emplace(t.path, static_cast<int>(i));
  }
  return byPath;
}

// The one of them that `path` lies strictly below, nearest first; -1 if none.
inline int enclosing(std::string_view path, const std::unordered_map<std::string_view, int>& machine) {
  for (std::string_view p = path; !p.empty();) {
    p = parentPath(p);
    if (auto it = machine.find(p); it != machine.end()) return it->second;
  }
  return -1;
}

}  // namespace reclaimd::controller

// What libcgroup sees: where each controller is mounted, cgroup v1 hierarchies included.
//
// reclaimd finds and walks the cgroup2 tree itself (Mountinfo.h, Tree.h explain why), but
// libcgroup knows the v1 hierarchies too, so `reclaimd probe` uses it to name the place the
// memory controller lives when it is not on cgroup2 (a hybrid mount, e.g. WSL with Docker).
#pragma once

#include <string>
#include <vector>

#include "base/Result.h"

namespace reclaimd::cgroup {

struct ControllerMount {
  std::string controller;
  std::string path;
};

// Every mounted controller as libcgroup reports it (cgroup_init, then the controller
// iterator), from the running system's mount table. libcgroup's own messages are silenced.
// Errors: Errc::Invalid with libcgroup's message (e.g. no cgroup filesystem mounted).
Result<std::vector<ControllerMount>> libcgroupMounts();

}  // namespace reclaimd::cgroup

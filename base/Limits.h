// Process limits the daemon sets for itself at start.
#pragma once

#include <cstdint>

#include "base/Result.h"

namespace reclaimd {

// Raises RLIMIT_NOFILE's soft limit to its hard limit and returns the soft limit now in force
// (unchanged when it already equals the hard limit). The soft limit is 1024 on most systems
// (kept low for select()), which a node with a thousand cgroup targets exhausts; reclaimd
// waits with epoll only, so it can use the hard limit. Errors: the getrlimit/setrlimit errno.
Result<std::uint64_t> raiseFdLimit();

}  // namespace reclaimd

#include "access/Filesystems.h"

#include <algorithm>

namespace reclaimd::access {

std::vector<Filesystem> filesystemsToWatch(const std::vector<cgroup::MountEntry>& mounts) {
  std::vector<Filesystem> out;
  for (const auto& m : mounts) {
    if (m.source.rfind("/dev/", 0) != 0 || m.fsType == "devtmpfs" || m.fsType == "tmpfs") continue;
    const bool seen = std::any_of(out.begin(), out.end(), [&](const Filesystem& f) { return f.device == m.device; });
    if (!seen) out.push_back(Filesystem{m.mountPoint, m.fsType, m.device});
  }
  return out;
}

}  // namespace reclaimd::access

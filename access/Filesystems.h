// Which mounted filesystems to watch for file access: those on a block device, whose files'
// cache is what reclaim takes, once each (a filesystem mark covers every mount of it).
#pragma once

#include <string>
#include <vector>

#include "cgroup/Mountinfo.h"

namespace reclaimd::access {

struct Filesystem {
  std::string mountPoint;  // where to mark it: its first mount in the table
  std::string fsType;
  std::string device;  // major:minor
};

// From the mount table: each filesystem whose source is a /dev path, once per device. Pseudo
// filesystems, tmpfs (shmem: dropping it needs swap) and network and FUSE filesystems (no
// source under /dev) are left out.
std::vector<Filesystem> filesystemsToWatch(const std::vector<cgroup::MountEntry>& mounts);

}  // namespace reclaimd::access

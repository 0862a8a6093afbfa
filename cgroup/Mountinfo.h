// /proc/self/mountinfo: where the cgroup2 hierarchy is mounted.
//
// libcgroup 2.0.2 cannot find a cgroup2 mount reliably on hybrid hosts (memory on v1,
// an empty cgroup2 at /sys/fs/cgroup/unified), so reclaimd reads mountinfo itself.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/Result.h"

namespace reclaimd::cgroup {

struct MountEntry {
  std::string device;      // major:minor of the filesystem ("254:0"): one per superblock
  std::string root;        // path inside the filesystem that is mounted ("/" for the whole tree)
  std::string mountPoint;  // with \040-style escapes decoded
  std::string fsType;
  std::string source;
};

// Parses mountinfo lines:
//   36 35 98:0 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:9 - cgroup2 cgroup2 rw
// Errors: Errc::Parse naming the line that does not have the fields and the " - " separator.
Result<std::vector<MountEntry>> parseMountinfo(std::string_view content);

// The cgroup2 mount to use: one showing the whole hierarchy (root "/"), preferring
// /sys/fs/cgroup, then the first such mount; nullopt when there is none.
std::optional<MountEntry> findCgroup2(const std::vector<MountEntry>& mounts);

// The cgroup2 path of a process from /proc/<pid>/cgroup ("0::/system.slice/x.service"),
// relative to its cgroup namespace's root and without the leading '/' ("" for the root);
// nullopt when the file has no v2 line.
std::optional<std::string> parseProcCgroup(std::string_view content);

}  // namespace reclaimd::cgroup

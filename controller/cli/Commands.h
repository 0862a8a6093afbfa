// The subcommands behind the command line (Cli.cpp parses; these run).
#pragma once

#include <string>
#include <vector>

#include "controller/operate/Endpoints.h"

namespace reclaimd::controller {

struct RunOptions {
  std::string config;
  std::string procRoot = "/proc";
  std::string cgroupRoot;  // empty: found in mountinfo; given: must be a cgroup2 root
  std::string sysRoot = "/sys";
  bool json = false;  // probe: one JSON object instead of "key: value" lines
  std::string logLevel = "info";
  bool dryRun = false;
  EndpointOptions endpoints;
  std::string recordPath;   // `record`: the recording's file
  std::string recordLimit;  // `record`: its bound ("256M")
};

int commandRun(const RunOptions& options);
int commandProbe(const RunOptions& options);
int commandCheckConfig(const std::string& file, const std::vector<std::string>& explainPaths);
// A cgroup path as check-config --explain takes it, relative to the cgroup root: "/system.slice" (as
// /proc/PID/cgroup writes it), "system.slice/", and the path under the cgroup2 root `cgroupRoot`
// (where the daemon would find it: /sys/fs/cgroup/unified on a hybrid layout) or under the usual
// mount /sys/fs/cgroup are the same cgroup.
std::string cgroupRelative(const std::string& raw, const std::string& cgroupRoot);
// What check-config --explain adds for a cgroup `path` (relative to the root) that does not exist now
// under the cgroup2 root `cgroupRoot`: a mistyped path is still explained, and the user learns that nothing
// is there yet. "" when it exists, when that cannot be told, and when no root was found ("").
std::string absentCgroupNote(const std::string& cgroupRoot, const std::string& path);
int commandStatus(const std::string& socketPath, bool json);
int commandReplay(const std::string& file);

}  // namespace reclaimd::controller

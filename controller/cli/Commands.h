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
// What check-config --explain adds for a cgroup `path` (relative to the root) that does not exist now
// under the cgroup2 root `cgroupRoot`: a mistyped path is still explained, and the user learns that nothing
// is there yet. "" when it exists, when that cannot be told, and when no root was found ("").
std::string absentCgroupNote(const std::string& cgroupRoot, const std::string& path);
int commandStatus(const std::string& socketPath, bool json);
int commandReplay(const std::string& file);

}  // namespace reclaimd::controller

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
int commandStatus(const std::string& socketPath, bool json);
int commandReplay(const std::string& file);

}  // namespace reclaimd::controller

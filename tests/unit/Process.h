// Runs the real reclaimd binary as a child for end-to-end tests on fixture trees.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace reclaimd::testing {

class Process {
 public:
  // Starts `argv` with stdout and stderr going to `logPath`, with `env` ("NAME=value") added
  // to the environment.
  Process(const std::vector<std::string>& argv, const std::string& logPath, const std::vector<std::string>& env = {});
  ~Process();
  Process(const Process&) = delete;
  Process& operator=(const Process&) = delete;

  void signal(int sig) const;
  pid_t pid() const { return pid_; }
  // Waits for exit; nullopt on timeout (the child is then killed). Returns the exit status
  // (or 128+signal).
  std::optional<int> wait(std::chrono::milliseconds timeout);
  bool running();

 private:
  pid_t pid_ = -1;
  std::optional<int> status_;
};

// Runs to completion and returns {exit code, combined output}.
std::pair<int, std::string> runCommand(const std::vector<std::string>& argv);

// Polls `condition` every 20 ms until true or `timeout`; returns its last value.
bool eventually(const std::function<bool()>& condition, std::chrono::milliseconds timeout);

}  // namespace reclaimd::testing

// Runs the real reclaimd on a fixture tree (proc/ and cg/ under a Fixture, as SimFiles
// writes them) and reads its log: the shared base of the end-to-end tests.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "tests/unit/Fixture.h"
#include "tests/unit/Process.h"

namespace reclaimd::testing {

class DaemonHarness : public ::testing::Test {
 protected:
  // Starts reclaimd with fx_'s policy.yaml (written by the test), debug logging (unless `extra`
  // sets --log-level), its own status socket, and `extra` arguments; `env` is added to its
  // environment.
  std::unique_ptr<Process> start(std::vector<std::string> extra = {}, std::vector<std::string> env = {}) {
    std::vector<std::string> argv = {RECLAIMD_BINARY,         "--proc-root",     fx_.path("proc"),
                                     "--cgroup-root",         fx_.path("cg"),    "--config",
                                     fx_.path("policy.yaml"), "--status-socket", fx_.path("run/status.sock")};
    // The CLI takes --log-level once: debug unless the test chose its own.
    if (std::find(extra.begin(), extra.end(), "--log-level") == extra.end())
      argv.insert(argv.end(), {"--log-level", "debug"});
    argv.insert(argv.end(), extra.begin(), extra.end());
    return std::make_unique<Process>(argv, fx_.path("log"), env);
  }
  // Writes `policy` as policy.yaml, then starts.
  std::unique_ptr<Process> startWith(const std::string& policy, std::vector<std::string> extra = {}) {
    fx_.write("policy.yaml", policy);
    return start(std::move(extra));
  }

  std::string log() const { return fx_.read("log"); }
  bool logHas(const std::string& text, std::size_t from = 0) const {
    return log().find(text, from) != std::string::npos;
  }
  bool waitLog(const std::string& text, std::size_t from = 0,
               std::chrono::milliseconds timeout = std::chrono::seconds(10)) const {
    return eventually([&] { return logHas(text, from); }, timeout);
  }
  // Occurrences of `text` in the log between offsets `from` and `to`.
  std::size_t count(const std::string& text, std::size_t from = 0, std::size_t to = std::string::npos) const {
    const std::string l = log().substr(from, to == std::string::npos ? std::string::npos : to - from);
    std::size_t n = 0;
    for (std::size_t p = l.find(text); p != std::string::npos; p = l.find(text, p + 1))
      ++n;
    return n;
  }

  Fixture fx_;
};

}  // namespace reclaimd::testing

#include "controller/Cli.h"

#include <CLI/CLI.hpp>

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <iostream>

#include "base/Limits.h"
#include "base/Log.h"
#include "base/Units.h"
#include "controller/Endpoints.h"
#include "controller/ExitCodes.h"
#include "controller/ModeChoice.h"
#include "controller/Probe.h"
#include "controller/shell/Daemon.h"
#include "policies/Keys.h"
#include "policies/Loader.h"
#include "policies/Rules.h"
#include "policies/Step.h"

#ifndef RECLAIMD_VERSION
#define RECLAIMD_VERSION "unknown"
#endif

namespace reclaimd::controller {

namespace {

struct Common {
  std::string config;
  std::string procRoot = "/proc";
  std::string cgroupRoot;
  std::string logLevel = "info";
  bool dryRun = false;
  EndpointOptions endpoints;
};

Paths pathsOf(const Common& c) {
  return Paths{c.procRoot, c.cgroupRoot};
}

// The policy in force: the file when given, else the built-in default.
Result<policies::Policy> loadPolicy(const Common& c) {
  if (c.config.empty()) return policies::Policy{};
  return policies::loadPolicyFile(c.config);
}

int commandRun(const Common& c) {
  if (auto blocked = blockDaemonSignals(); !blocked) {
    std::cerr << blocked.error().message() << "\n";
    return kExitFailure;
  }
  auto level = parseLogLevel(c.logLevel);
  initLogging(level.value_or(spdlog::level::info));
  // Each target keeps two files open (its directory and memory.stat): a node with thousands of
  // cgroups needs more than the usual soft limit of 1024.
  if (auto fds = raiseFdLimit(); fds)
    spdlog::debug("event=fd_limit soft={}", *fds);
  else
    spdlog::warn("event=fd_limit error=\"{}\"", fds.error().message());
  auto policy = loadPolicy(c);
  if (!policy) {
    spdlog::error("event=config_invalid error=\"{}\"", policy.error().message());
    shutdownLogging();
    return kExitConfig;
  }
  RealClock clock;
  if (!c.endpoints.metricsListen.empty()) {
    if (auto address = parseLoopback(c.endpoints.metricsListen); !address) {
      spdlog::error("event=usage error=\"{}\"", address.error().message());
      shutdownLogging();
      return kExitUsage;
    }
  }
  DaemonOptions options;
  options.paths = pathsOf(c);
  options.endpoints = c.endpoints;
  options.configPath = c.config;
  options.dryRun = c.dryRun;
  Daemon daemon(options, *policy, clock);
  const int code = daemon.run();
  spdlog::info("event=exit code={}", code);
  shutdownLogging();
  return code;
}

int commandProbe(const Common& c) {
  auto policy = loadPolicy(c);
  if (!policy) {
    std::cerr << policy.error().message() << "\n";
    return kExitConfig;
  }
  const Capabilities caps = probe(pathsOf(c));
  const EffectiveMode mode = chooseMode(policy->mode, caps);
  std::cout << describe(caps);
  std::cout << "requested_mode: " << toString(policy->mode) << "\n";
  std::cout << "effective_mode: " << toString(mode.mode);
  if (mode.mode == policies::Mode::Gradual) std::cout << " (" << toString(mode.format) << ")";
  std::cout << "\nreason: " << mode.reason << "\n";
  return mode.unusable ? kExitUnavailable : kExitOk;
}

// Connects to the daemon's status socket and prints what it says.
int commandStatus(const std::string& socketPath) {
  UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_un addr{};
  if (socketPath.size() >= sizeof addr.sun_path) {
    std::cerr << "status socket path too long: " << socketPath << "\n";
    return kExitUsage;
  }
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, socketPath.c_str(), socketPath.size() + 1);
  if (!fd || ::connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    std::cerr << "reclaimd is not running, or not reachable at " << socketPath << ": " << std::strerror(errno) << "\n";
    return kExitUnavailable;
  }
  // Answers come at once; a daemon that does not answer within the readiness probe's 5 s is
  // reported, not waited on forever.
  timeval timeout{5, 0};
  ::setsockopt(fd.get(), SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
  std::string text;
  char buf[4096];
  for (;;) {
    const ssize_t n = ::read(fd.get(), buf, sizeof buf);
    if (n > 0) {
      text.append(buf, static_cast<std::size_t>(n));
      continue;
    }
    if (n < 0) {
      std::cerr << "reading the status from " << socketPath << ": " << std::strerror(errno) << "\n";
      return kExitFailure;
    }
    break;
  }
  if (text.empty()) {
    std::cerr << "reclaimd at " << socketPath << " closed without an answer (only root may ask)\n";
    return kExitFailure;
  }
  std::cout << text;
  return kExitOk;
}

int commandCheckConfig(const std::string& file, const std::vector<std::string>& explainPaths) {
  auto policy = policies::loadPolicyFile(file);
  if (!policy) {
    std::cerr << policy.error().message() << "\n";
    return kExitConfig;
  }
  if (!explainPaths.empty()) {
    for (const std::string& raw : explainPaths) {
      // Accept "/system.slice" and "system.slice/" as the same cgroup; reject what leaves the root.
      std::string path = raw;
      while (!path.empty() && path.front() == '/')
        path.erase(0, 1);
      while (!path.empty() && path.back() == '/')
        path.pop_back();
      if (!path.empty()) {
        auto valid = policies::Pattern::parse(path);
        if (!valid || !valid->exact()) {
          std::cerr << "--explain " << raw << ": not a cgroup path"
                    << (valid ? std::string(" (it has wildcards)") : ": " + valid.error().message()) << "\n";
          return kExitUsage;
        }
      }
      std::cout << policies::explain(*policy, path);
    }
    return kExitOk;
  }
  const auto& p = *policy;
  std::cout << file << ": valid\n"
            << policies::describeSettings(p) << "rules: " << p.rules.size()
            << (p.rules.empty() ? " (the whole tree under the settings above)" : "") << "\n";
  for (std::size_t i = 0; i < p.rules.size(); ++i) {
    const auto& r = p.rules[i];
    std::cout << "  " << i + 1 << ". line " << r.line << " match \"" << r.pattern.text() << "\": " << toString(r.mode)
              << ", floor " << formatBytes(r.floor) << ", idle source " << toString(r.idleSource) << ", grace "
              << formatDuration(r.idle.grace) << "\n";
  }
  return kExitOk;
}

}  // namespace

int runCli(int argc, char** argv) {
  CLI::App app{"reclaimd: gives a Linux machine's idle page cache back to its host"};
  app.set_version_flag("--version", std::string("reclaimd ") + RECLAIMD_VERSION);
  app.require_subcommand(0, 1);
  app.fallthrough();

  Common c;
  app.add_option("-c,--config", c.config, "YAML policy file (default: the built-in policy)");
  app.add_option("--proc-root", c.procRoot, "where procfs is mounted (tests point this at a fixture)")
      ->capture_default_str();
  app.add_option("--cgroup-root", c.cgroupRoot, "the cgroup2 root (default: found in /proc/self/mountinfo)");
  app.add_option("--log-level", c.logLevel, "trace, debug, info, warn, error or off")
      ->capture_default_str()
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "warning", "error", "off"}));
  app.add_flag("--dry-run", c.dryRun, "decide and log, write nothing (the probe's zero-byte requests aside)");
  app.add_option("--status-socket", c.endpoints.statusSocket,
                 "unix socket that `reclaimd status` reads (root only; \"\" for none)")
      ->capture_default_str();
  app.add_option("--metrics-file", c.endpoints.metricsFile,
                 "Prometheus textfile for node_exporter, rewritten atomically every 10s (default: none)");
  app.add_option("--metrics-listen", c.endpoints.metricsListen,
                 "serve Prometheus metrics over HTTP at /metrics on a loopback HOST:PORT (default: off)");

  auto* run = app.add_subcommand("run", "run the daemon (the default)");
  auto* probeCmd = app.add_subcommand("probe", "print what this kernel supports and the mode that would run");
  auto* statusCmd = app.add_subcommand("status", "ask the running daemon what it is doing");
  std::string statusSocket = kDefaultStatusSocket;
  statusCmd->add_option("--socket", statusSocket, "the daemon's status socket")->capture_default_str();
  std::string checkFile;
  std::vector<std::string> explainPaths;
  auto* check = app.add_subcommand("check-config", "validate a policy file without running");
  check->add_option("file", checkFile, "the policy file")->required();
  check
      ->add_option("--explain", explainPaths,
                   "cgroup paths (relative to the cgroup root): which rule governs each, and why")
      ->expected(1, -1);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    // --help and --version exit 0; every other parse error is a usage error.
    return code == 0 ? kExitOk : kExitUsage;
  }
  if (*probeCmd) return commandProbe(c);
  if (*statusCmd) return commandStatus(statusSocket);
  if (*check) return commandCheckConfig(checkFile, explainPaths);
  (void)run;
  return commandRun(c);
}

}  // namespace reclaimd::controller

#include "controller/cli/Commands.h"

#include <sys/stat.h>

#include <cerrno>
#include <fstream>
#include <iostream>
#include <string_view>
#include <nlohmann/json.hpp>

#include "base/Event.h"
#include "base/Limits.h"
#include "base/Log.h"
#include "base/Quantities.h"
#include "controller/ExitCodes.h"
#include "controller/KernelAccess.h"
#include "controller/Probe.h"
#include "controller/cli/Complain.h"
#include "controller/engine/CgroupPaths.h"
#include "controller/engine/ModeChoice.h"
#include "controller/record/Replay.h"
#include "controller/shell/Daemon.h"
#include "policies/Guard.h"
#include "policies/Keys.h"
#include "policies/Loader.h"
#include "policies/Rules.h"
#include "policies/Step.h"

namespace reclaimd::controller {

namespace {

Paths pathsOf(const RunOptions& o) {
  return Paths{o.procRoot, o.cgroupRoot, o.sysRoot};
}

// A policy file as the daemon loads it: read, its YAML first read by a fresh process under a
// bound (policies/Guard.h), then parsed. On error `code` says whose fault it was: kExitNoInput
// when a file cannot be opened or read (missing, no permission), kExitConfig for its content
// (invalid, not a regular file, or one the YAML reader does not finish), kExitFailure when the
// check itself could not run (posix_spawn's EAGAIN or ENOMEM: a retry may succeed, so systemd's
// restart is not prevented as it is for 66 and 78).
Result<policies::Policy> loadChecked(const std::string& path, int& code,
                                     std::vector<policies::PolicyText>* texts = nullptr) {
  code = kExitConfig;
  auto files = policies::readPolicyFiles(path);
  if (!files) {
    if (files.error().errnoValue() != 0) code = kExitNoInput;
    return files.error();
  }
  if (texts) *texts = *files;
  if (auto finished = policies::checkParseFinishes(*files, policies::ParseGuard{}); !finished) {
    if (finished.error().errnoValue() != 0) code = kExitFailure;
    return finished.error();
  }
  return policies::parsePolicyFiles(*files);
}

// Why a policy could not be loaded, on stderr. Its content's errors start with the file and
// position (Complain.h); a file that could not be opened, or a check that could not run, is the
// program's complaint.
void sayPolicyError(const Error& error) {
  if (error.errnoValue() != 0) return complain(error.message());
  std::cerr << error.message() << "\n";
}

// The policy in force: the file when given, else the built-in default.
Result<policies::Policy> loadPolicy(const RunOptions& o, int& code,
                                    std::vector<policies::PolicyText>* texts = nullptr) {
  if (o.config.empty()) return policies::Policy{};
  return loadChecked(o.config, code, texts);
}

// What stops the daemon before it starts: an explicit --cgroup-root that is not a cgroup2 root
// (a typo must not fall back to dropcache and write drop_caches), a --metrics-listen that is
// not loopback, a status socket path that is taken. Logged; the exit code, or 0 to go on.
int preflight(const RunOptions& o) {
  if (!o.cgroupRoot.empty()) {
    if (auto root = checkCgroupRoot(o.cgroupRoot); !root) {
      emit(Event(Severity::Error, "usage").add("error", root.error().message()));
      return kExitNoInput;
    }
  }
  if (!o.recordLimit.empty()) {
    auto limit = parseBytes(o.recordLimit);
    if (!limit || *limit < 4096) {
      emit(Event(Severity::Error, "usage")
               .add("error", "--record-limit '" + o.recordLimit + "' is not a size of at least 4K (e.g. 256M)"));
      return kExitUsage;
    }
  }
  if (!o.endpoints.metricsListen.empty()) {
    if (auto address = parseLoopback(o.endpoints.metricsListen); !address) {
      emit(Event(Severity::Error, "usage").add("error", address.error().message()));
      return kExitUsage;
    }
  }
  if (!o.endpoints.statusSocket.empty()) {
    if (auto free = checkStatusSocket(o.endpoints.statusSocket); !free) {
      emit(Event(Severity::Error, "status_socket_taken").add("error", free.error().message()));
      return endpointsExitCode(free.error());
    }
  }
  return kExitOk;
}

}  // namespace

int commandRun(const RunOptions& o) {
  if (auto blocked = blockDaemonSignals(); !blocked) {
    complain(blocked.error().message());
    return kExitFailure;
  }
  auto level = parseLogLevel(o.logLevel);
  initLogging(level.value_or(spdlog::level::info));
  // Each target keeps two files open (its directory and memory.stat): a node with thousands of
  // cgroups needs more than the usual soft limit of 1024.
  if (auto fds = raiseFdLimit(); fds)
    emit(Event(Severity::Debug, "fd_limit").add("soft", *fds));
  else
    emit(Event(Severity::Warn, "fd_limit").add("error", fds.error().message()));
  // Every run that logged anything ends with its exit code, whatever stopped it.
  const auto finish = [](int code) {
    spdlog::info("event=exit code={}", code);
    shutdownLogging();
    return code;
  };
  int failed = kExitConfig;
  std::vector<policies::PolicyText> texts;
  auto policy = loadPolicy(o, failed, &texts);
  if (!policy) {
    emit(Event(Severity::Error, failed == kExitConfig ? "config_invalid" : "setup_failed")
             .add("error", policy.error().message()));
    return finish(failed);
  }
  saySkippedDropIns(o.config);
  if (const int code = preflight(o); code != kExitOk) return finish(code);
  RealClock clock;
  DaemonOptions options;
  options.paths = pathsOf(o);
  options.endpoints = o.endpoints;
  options.configPath = o.config;
  options.dryRun = o.dryRun;
  options.recordPath = o.recordPath;
  options.policyFiles = std::move(texts);
  if (!o.recordLimit.empty()) options.recordLimit = parseBytes(o.recordLimit).value_or(0);
  Daemon daemon(options, *policy, clock);
  return finish(daemon.run());
}

int commandProbe(const RunOptions& o) {
  int failed = kExitConfig;
  auto policy = loadPolicy(o, failed);
  if (!policy) {
    sayPolicyError(policy.error());
    return failed;
  }
  if (!o.cgroupRoot.empty()) {
    if (auto root = checkCgroupRoot(o.cgroupRoot); !root) {
      complain(root.error().message());
      return kExitNoInput;
    }
  }
  const Capabilities caps = probe(pathsOf(o), machineTrigger(policy->pressure));
  KernelAccess access = probeAccess(o.sysRoot);
  access.files = probeFiles(pathsOf(o).proc("self/mountinfo"));
  // As the daemon chooses (Engine.cpp): a rule's gradual mode counts, and rules rule out the fallback.
  const EffectiveMode mode = chooseMode(policy->reclaimMode(), caps, !policy->rules.empty());
  if (o.json) {
    nlohmann::json out = describeJson(caps);
    out["kernel_access"] = accessJson(access);
    out["requested_mode"] = toString(policy->reclaimMode());
    out["effective_mode"] = toString(mode.mode);
    out["format"] =
        mode.mode == policies::Mode::Gradual ? nlohmann::json(toString(mode.format)) : nlohmann::json(nullptr);
    out["reason"] = mode.reason;
    // Paths are bytes, not always UTF-8: such a byte becomes U+FFFD (as in status) rather than an exception.
    std::cout << out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    return mode.unusable ? kExitUnavailable : kExitOk;
  }
  std::cout << describe(caps) << describeAccess(access);
  std::cout << "requested_mode: " << toString(policy->reclaimMode()) << "\n";
  std::cout << "effective_mode: " << toString(mode.mode);
  if (mode.mode == policies::Mode::Gradual) std::cout << " (" << toString(mode.format) << ")";
  std::cout << "\nreason: " << mode.reason << "\n";
  return mode.unusable ? kExitUnavailable : kExitOk;
}

namespace {

// `path` with `dir` and the '/' after it taken off its front, if it lies under `dir`.
bool stripDir(std::string& path, std::string_view dir) {
  if (dir.empty() || !within(path, dir)) return false;
  path.erase(0, dir.size());
  return true;
}

bool explainOne(const policies::Policy& policy, const std::string& raw, const std::string& cgroupRoot) {
  const std::string path = cgroupRelative(raw, cgroupRoot);
  if (!path.empty()) {
    auto valid = policies::Pattern::parse(path);
    if (!valid || !valid->exact()) {
      complain("--explain " + raw + ": not a cgroup path" +
               (valid ? std::string(" (it has wildcards)") : ": " + valid.error().message()));
      return false;
    }
  }
  std::cout << policies::explain(policy, path) << absentCgroupNote(cgroupRoot, path);
  return true;
}

}  // namespace

std::string cgroupRelative(const std::string& raw, const std::string& cgroupRoot) {
  std::string path = raw;
  if (!stripDir(path, cgroupRoot)) stripDir(path, "/sys/fs/cgroup");
  while (!path.empty() && path.front() == '/')
    path.erase(0, 1);
  while (!path.empty() && path.back() == '/')
    path.pop_back();
  return path;
}

std::string absentCgroupNote(const std::string& cgroupRoot, const std::string& path) {
  if (cgroupRoot.empty()) return "";
  const std::string dir = path.empty() ? cgroupRoot : cgroupRoot + "/" + path;
  struct stat st {};
  if (::stat(dir.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) return "";
  } else if (errno != ENOENT && errno != ENOTDIR) {
    return "";  // it may exist where it cannot be looked at (EACCES): no claim either way
  }
  return "  no such cgroup exists now under " + cgroupRoot + "; the above is what governs it if it appears\n";
}

int commandCheckConfig(const std::string& file, const std::vector<std::string>& explainPaths) {
  for (const std::string& path : policies::skippedDropIns(file))
    complain("warning: " + path + ": skipped: drop-ins are read only when named *.yaml");
  int failed = kExitConfig;
  auto policy = loadChecked(file, failed);
  if (!policy) {
    sayPolicyError(policy.error());
    return failed;
  }
  if (!explainPaths.empty()) {
    // Where the daemon would look; a machine without cgroup2 gets no word on whether a cgroup exists.
    std::string problem;
    const std::string cgroupRoot = findCgroupRoot(Paths{}, problem);
    for (const std::string& raw : explainPaths) {
      if (!explainOne(*policy, raw, cgroupRoot)) return kExitUsage;
    }
    return kExitOk;
  }
  const auto& p = *policy;
  std::cout << file << ": valid\n";
  if (p.files.size() > 1) {
    std::cout << "drop-ins merged, in this order:\n";
    for (std::size_t i = 1; i < p.files.size(); ++i)
      std::cout << "  " << p.files[i] << "\n";
  } else {
    std::cout << "drop-ins: none in " << policies::dropInDirectory(file) << "\n";
  }
  std::cout << policies::describeSettings(p) << "rules: " << p.rules.size()
            << (p.rules.empty() ? " (the whole tree under the settings above)" : "") << "\n";
  for (std::size_t i = 0; i < p.rules.size(); ++i) {
    const auto& r = p.rules[i];
    const std::string of = r.file == 0 || r.file >= p.files.size() ? "" : " of " + p.files[r.file];
    std::cout << "  " << i + 1 << ". line " << r.line << of << " match \"" << r.pattern.text()
              << "\": " << toString(r.mode) << ", floor " << formatBytes(r.floor) << ", idle source "
              << toString(r.idleSource) << ", grace " << formatDuration(r.idle.grace) << "\n";
  }
  return kExitOk;
}

int commandReplay(const std::string& file) {
  std::ifstream in(file);
  if (!in) {
    complain("replay: " + errnoError(errno, "cannot open " + file).message());
    return kExitNoInput;
  }
  return replayRecording(in, std::cout, std::cerr);
}

}  // namespace reclaimd::controller

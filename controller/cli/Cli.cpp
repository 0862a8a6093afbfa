#include "controller/cli/Cli.h"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <array>
#include <csignal>
#include <string_view>

#include "controller/ExitCodes.h"
#include "controller/cli/Commands.h"
#include "policies/Guard.h"

#ifndef RECLAIMD_VERSION
#define RECLAIMD_VERSION "unknown"
#endif
#ifndef RECLAIMD_GIT_COMMIT
#define RECLAIMD_GIT_COMMIT "unknown"
#endif

namespace reclaimd::controller {

namespace {

constexpr std::array<std::string_view, 6> kSubcommands = {"run", "probe", "check-config", "status", "record",
                                                          "replay"};
// Options that take no value: the word after them is not theirs.
constexpr std::array<std::string_view, 5> kFlags = {"--dry-run", "--json", "--help", "-h", "--version"};

bool isSubcommand(std::string_view a) {
  return std::find(kSubcommands.begin(), kSubcommands.end(), a) != kSubcommands.end();
}

// Whether args[i] is the value of the option before it ("--config probe").
bool isOptionValue(const std::vector<std::string>& args, std::size_t i) {
  if (i < 2) return false;
  const std::string& prev = args[i - 1];
  if (prev.empty() || prev[0] != '-' || prev.find('=') != std::string::npos) return false;
  return std::find(kFlags.begin(), kFlags.end(), prev) == kFlags.end();
}

void addPaths(CLI::App* cmd, RunOptions& o) {
  cmd->add_option("--proc-root", o.procRoot, "where procfs is mounted (tests point this at a fixture)")
      ->type_name("DIR")
      ->capture_default_str();
  // An empty value would read as "not given" and fall back to the mount table: refused, as any
  // other --cgroup-root that names no cgroup2 root.
  const CLI::Validator nonEmpty(
      [](std::string& v) {
        return v.empty() ? std::string("an empty path names no cgroup2 root (leave the option out to find it)")
                         : std::string();
      },
      "", "not empty");
  cmd->add_option("--cgroup-root", o.cgroupRoot,
                  "the cgroup2 root (default: found in /proc/self/mountinfo; given: must be a cgroup2 root)")
      ->type_name("DIR")
      ->check(nonEmpty);
  cmd->add_option("--sys-root", o.sysRoot, "where sysfs is mounted (tests point this at a fixture)")
      ->type_name("DIR")
      ->capture_default_str();
  cmd->add_option("-c,--config", o.config, "YAML policy file (default: the built-in policy)")->type_name("FILE");
}

void addRunOptions(CLI::App* run, RunOptions& o) {
  addPaths(run, o);
  run->add_option("--log-level", o.logLevel, "trace, debug, info, warn, error or off")
      ->type_name("LEVEL")
      ->capture_default_str()
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "warning", "error", "off"}));
  run->add_flag("--dry-run", o.dryRun, "decide and log, write nothing (the probe's zero-byte requests aside)");
  run->add_option("--status-socket", o.endpoints.statusSocket,
                  "unix socket that `reclaimd status` reads (root only; \"\" for none)")
      ->type_name("PATH")
      ->capture_default_str();
  run->add_option("--metrics-file", o.endpoints.metricsFile,
                  "Prometheus textfile for node_exporter, rewritten atomically every 10s (default: none)")
      ->type_name("PATH");
  run->add_option("--metrics-listen", o.endpoints.metricsListen,
                  "serve Prometheus metrics over HTTP at /metrics on a loopback HOST:PORT (default: off)")
      ->type_name("HOST:PORT");
}

// `record FILE [run options]` and `replay FILE`.
std::pair<CLI::App*, CLI::App*> addRecordAndReplay(CLI::App& app, RunOptions& record, std::string& replayFile) {
  auto* recordCmd = app.add_subcommand("record", "run the daemon and record what its engine sees, for `replay`");
  recordCmd->add_option("FILE", record.recordPath, "the recording (created, mode 0600)")->type_name("")->required();
  recordCmd->add_option("--record-limit", record.recordLimit, "the recording's bound (default 256M)")
      ->type_name("SIZE");
  addRunOptions(recordCmd, record);
  auto* replayCmd = app.add_subcommand("replay", "run the engine over a recording; print its commands and events");
  replayCmd->add_option("FILE", replayFile, "the recording")->type_name("")->required();
  return {recordCmd, replayCmd};
}

// `probe [paths] [--json]`.
CLI::App* addProbe(CLI::App& app, RunOptions& probe) {
  auto* cmd = app.add_subcommand("probe", "print what this kernel supports and the mode that would run");
  addPaths(cmd, probe);
  cmd->add_flag("--json", probe.json, "print the probe as JSON");
  return cmd;
}

// `check-config FILE [--explain CGROUP...]`.
CLI::App* addCheckConfig(CLI::App& app, std::string& file, std::vector<std::string>& explainPaths) {
  auto* cmd = app.add_subcommand("check-config", "validate a policy file without running");
  cmd->add_option("FILE", file, "the policy file")->type_name("")->required();
  cmd->add_option("--explain", explainPaths,
                  "cgroup paths (relative to the cgroup root, or under /sys/fs/cgroup): which rule governs each, "
                  "and why")
      ->type_name("CGROUP")
      ->expected(1, -1);
  return cmd;
}

}  // namespace

std::vector<std::string> normalizeArgs(std::vector<std::string> args) {
  if (args.size() < 2) {
    args.emplace_back("run");
    return args;
  }
  if (args[1] == "--help" || args[1] == "-h" || args[1] == "--version") return args;
  for (std::size_t i = 1; i < args.size(); ++i) {
    if (!isSubcommand(args[i]) || isOptionValue(args, i)) continue;
    std::string name = args[i];
    args.erase(args.begin() + static_cast<std::ptrdiff_t>(i));
    args.insert(args.begin() + 1, std::move(name));
    return args;
  }
  args.insert(args.begin() + 1, "run");
  return args;
}

int runCli(int argc, char** argv) {
  // The policy check's child (policies/Guard.h): before anything else, so it starts no thread and
  // reads nothing but its stdin. Hidden from --help: only reclaimd itself runs it.
  if (argc == 2 && argv[1] == policies::kParseSubcommand) return policies::parsePolicyChild();
  // An ignored SIGCHLD survives exec (a container's init may pass one on): the kernel would then
  // reap the policy check's child before reclaimd learns how it ended.
  (void)std::signal(SIGCHLD, SIG_DFL);
  CLI::App app{"reclaimd: gives a Linux machine's idle page cache back to its host"};
  app.set_version_flag("--version", std::string("reclaimd ") + RECLAIMD_VERSION + " (" + RECLAIMD_GIT_COMMIT + ")");
  app.name("reclaimd");
  app.require_subcommand(1, 1);
  // A usage error names the program, as other tools' do, so that in a script's output it is clear which
  // command refused its arguments. --help and --version are not failures: they still go to stdout.
  app.failure_message([](const CLI::App* parsed, const CLI::Error& e) {
    return "reclaimd: " + CLI::FailureMessage::simple(parsed, e);
  });

  RunOptions run, probe, record;
  auto* runCmd = app.add_subcommand("run", "run the daemon (the default)");
  addRunOptions(runCmd, run);
  std::string replayFile;
  auto [recordCmd, replayCmd] = addRecordAndReplay(app, record, replayFile);
  auto* probeCmd = addProbe(app, probe);
  auto* statusCmd = app.add_subcommand("status", "ask the running daemon what it is doing");
  std::string statusSocket = kDefaultStatusSocket;
  bool json = false;
  statusCmd->add_option("--socket", statusSocket, "the daemon's status socket")
      ->type_name("PATH")
      ->capture_default_str();
  statusCmd->add_flag("--json", json, "print the status as JSON");
  std::string checkFile;
  std::vector<std::string> explainPaths;
  auto* check = addCheckConfig(app, checkFile, explainPaths);

  std::vector<std::string> args = normalizeArgs(std::vector<std::string>(argv, argv + argc));
  std::vector<char*> pointers;
  for (std::string& a : args)
    pointers.push_back(a.data());
  try {
    app.parse(static_cast<int>(pointers.size()), pointers.data());
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    // --help and --version exit 0; every other parse error is a usage error.
    return code == 0 ? kExitOk : kExitUsage;
  }
  if (*probeCmd) return commandProbe(probe);
  if (*recordCmd) return commandRun(record);
  if (*replayCmd) return commandReplay(replayFile);
  if (*statusCmd) return commandStatus(statusSocket, json);
  if (*check) return commandCheckConfig(checkFile, explainPaths);
  return commandRun(run);
}

}  // namespace reclaimd::controller

// The daemon: the thin shell around the engine. It owns the loop (epoll with a handler table:
// a signalfd for SIGTERM, SIGINT and SIGHUP, a timerfd for the engine's next turn, the PSI
// trigger set, the status and metrics endpoints), the adapters that read and write the machine,
// and the probe. Each turn takes one `now` and hands it to runTurn (Turn.h), which carries out
// the engine's commands.
#pragma once

#include <optional>
#include <string>

#include "base/Clock.h"
#include "base/UniqueFd.h"
#include "controller/Paths.h"
#include "controller/engine/Engine.h"
#include "controller/operate/Endpoints.h"
#include "controller/operate/Notify.h"
#include "controller/operate/Status.h"
#include "controller/record/Recorder.h"
#include "controller/shell/EventLog.h"
#include "controller/shell/Io.h"
#include "controller/shell/Loop.h"
#include "controller/shell/PressureIo.h"
#include "controller/shell/Reloader.h"
#include "controller/shell/Tracker.h"
#include "policies/Policy.h"
#include "proc/Reader.h"

namespace reclaimd::controller {

struct DaemonOptions {
  Paths paths;
  EndpointOptions endpoints;
  std::string configPath;  // empty: built-in policy; SIGHUP then has nothing to reload
  bool dryRun = false;     // decide and log; write nothing but the probe's zero-byte requests
  // `reclaimd record`: where the recording goes (empty: none), its bound, and the policy's
  // files as read (the recording holds them).
  std::string recordPath;
  std::uint64_t recordLimit = kDefaultRecordLimit;
  std::vector<policies::PolicyText> policyFiles;
};

// Blocks the signals the daemon takes through its signalfd (SIGTERM, SIGINT, SIGHUP, and
// SIGUSR1, SIGUSR2 and SIGALRM, which it ignores rather than die of) in the calling thread, and
// ignores SIGPIPE. Call before any other thread (the logger's) starts: threads inherit the mask,
// and an unblocked thread would take SIGTERM's default action and kill the process.
Result<void> blockDaemonSignals();

// Warns of each *.yml file in the policy's drop-in directory (policies::skippedDropIns), at start
// and at each reload: only *.yaml files are read.
void saySkippedDropIns(const std::string& configPath);

class Daemon {
 public:
  Daemon(DaemonOptions options, policies::Policy policy, const Clock& clock);

  // Probes, then loops until SIGTERM or SIGINT. Returns an exit code (ExitCodes.h).
  int run();

 private:
  Result<void> setUp();
  Result<void> listen();
  void applyProbe(const char* why);
  Capabilities probeWithRoot();
  void onSignal();
  void onTimer();
  void turn();
  void reload();
  void onReloaded();
  void rejectReload(const Error& error);
  void retainTargets();
  Result<void> startRecording();
  void armTimer(TimePoint at);
  void flushEvents();
  bool stopPending() const;

  // What `reclaimd status` and the metrics say; `withProcess` adds reclaimd's own process figures
  // (read from /proc/self: not for the sd_notify status line built every turn).
  Status snapshot(bool withProcess) const;
  // The snapshot `reclaimd status` and the metrics show: the process's figures, and the
  // reclaimable cache read afresh (the engine measures only what it may write to).
  Status report();
  std::string statusLine() const;

  DaemonOptions options_;
  const Clock& clock_;
  Engine engine_;
  std::optional<Loop> loop_;
  UniqueFd signals_, timer_;
  // Reads and parses the policy on SIGHUP while the loop goes on; destroyed before the loop.
  std::optional<Reloader> reloader_;
  std::optional<proc::Reader> proc_;
  std::optional<Tracker> tracker_;
  PressureIo pressure_;
  std::optional<SystemSensors> sensors_;
  std::optional<SystemActuator> actuator_;
  std::unique_ptr<Recorder> recorder_;
  std::vector<std::uint64_t> kept_;  // each target's id and its aim's inode (0: none), as last retained
  EventLog log_;
  Endpoints endpoints_;
  Notifier notifier_;
  TimePoint started_{};
  std::chrono::nanoseconds tick_{10'000'000};  // one USER_HZ tick; set from sysconf
  int exitCode_ = 0;
};

}  // namespace reclaimd::controller

// The daemon: one thread, one epoll. A timerfd paces the samples, a signalfd turns SIGTERM,
// SIGINT and SIGHUP into events; every loop turn takes one `now` and hands plain snapshots to
// the pure decision code (IdleDetector, decide, decompose, shareBudget), then carries out
// the plan.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/Clock.h"
#include "base/Files.h"
#include "base/UniqueFd.h"
#include "controller/Budget.h"
#include "controller/Decide.h"
#include "controller/operate/Endpoints.h"
#include "controller/IdleDetector.h"
#include "controller/ModeChoice.h"
#include "controller/operate/Notify.h"
#include "controller/Paths.h"
#include "controller/Pressure.h"
#include "controller/Probe.h"
#include "controller/operate/Status.h"
#include "controller/Targets.h"
#include "policies/Policy.h"

namespace reclaimd::controller {

struct DaemonOptions {
  Paths paths;
  EndpointOptions endpoints;
  std::string configPath;  // empty: built-in policy; SIGHUP then has nothing to reload
  bool dryRun = false;     // decide and log; write nothing but the probe's zero-byte requests
};

// Blocks SIGTERM, SIGINT and SIGHUP in the calling thread, so they reach the daemon only
// through its signalfd. Call before any other thread (the logger's) starts: threads inherit
// the mask, and an unblocked thread would take SIGTERM's default action and kill the process.
Result<void> blockDaemonSignals();

class Daemon {
 public:
  Daemon(DaemonOptions options, policies::Policy policy, const Clock& clock);

  // Probes, then loops until SIGTERM or SIGINT. Returns an exit code (ExitCodes.h).
  int run();

 private:
  // A machine-wide detector for idle settings a rule has and the machine's do not.
  struct RuleDetector {
    IdleConfig config;
    IdleDetector detector;
    IdleVerdict verdict;
  };

  Result<void> setUp();
  void applyProbe(const char* why);
  void applyPolicy();
  void onSignal();
  void onTimer();
  void tick(TimePoint now);
  void reload();

  // Schedules the next sample: soon while the machine (or a watched cgroup) is busy, to pin
  // down when work ends; at the regular period while quiet; exactly at the predicted end of a
  // grace period when that comes first.
  Result<void> armTimer(TimePoint at);
  void scheduleNext(TimePoint now, const IdleVerdict& verdict);

  // gradual
  void gradualTick(TimePoint now, const IdleVerdict& verdict);
  void refreshTargets(TimePoint now);
  void judgeTargets();
  const IdleVerdict& systemVerdict(const policies::IdleSettings& idle) const;
  void measureTargets(const proc::Meminfo& mem, TimePoint now);
  // The pass's shares: the step budget among the idle targets (Budget.h). No I/O.
  std::vector<Share> planPass(const proc::Meminfo& mem) const;
  std::uint64_t executePass(const std::vector<Share>& shares);
  // Writes one share in chunks; `budget` (the pass's write time left) shrinks by its duration.
  std::int64_t reclaimTarget(Target& target, std::uint64_t bytes, std::uint64_t known,
                             std::chrono::nanoseconds& budget);

  // pressure
  void setUpMachinePressure();
  void watchScope(PressureScope& scope, std::uint32_t id);
  void ensureScope(Target& target);
  PressureScope* scopeById(std::uint32_t id);
  void handlePressureEvents(TimePoint now);
  void reportPressure(PressureScope& scope, TimePoint now, const char* source);
  void samplePressure(PressureScope& scope, TimePoint now);
  bool pressureStops(Target& target);
  std::optional<std::uint64_t> readMachineRefaults();
  void checkRefaults(Target& target, TimePoint now);

  // what it is doing
  Status snapshot() const;
  std::string statusLine() const;
  void noteAction(const std::string& what);

  void dropCaches(const proc::Meminfo& before);
  void compact();
  bool stopRequested() const;
  std::optional<CpuSample> readSample(TimePoint now);
  std::optional<proc::Meminfo> readMeminfo();
  void reportSampleError(const Error& error);

  DaemonOptions options_;
  policies::Policy policy_;
  const Clock& clock_;

  Capabilities caps_;
  EffectiveMode mode_;
  IdleDetector detector_;  // the machine, under the policy's idle settings
  IdleVerdict verdict_;    // its last verdict
  std::vector<RuleDetector> ruleDetectors_;
  PeriodState period_;  // the machine's idle period (dropcache, compaction on entry)

  UniqueFd epoll_, timer_, signals_;
  KeptFile stat_, meminfo_;
  UniqueFd cgroupRoot_;
  std::string cgroupRootPath_;
  std::optional<Targets> targets_;
  PressureWatch watch_;
  std::optional<PressureScope> machinePressure_;  // watch id 0
  std::uint32_t nextScopeId_ = 1;
  std::optional<KeptFile> vmstat_;
  // Time spent inside memory.reclaim writes, cumulative: our own memory stall, subtracted from
  // the machine's pressure (PSI charges it to reclaimd's cgroup, so the root sees it).
  std::chrono::microseconds ownStall_{0};
  bool dropPausedLogged_ = false;
  bool cgroupPollingLogged_ = false;
  std::chrono::nanoseconds tick_{10'000'000};  // one USER_HZ tick; set from sysconf
  double overshoot_ = 0;
  std::uint64_t machineRefaults_ =
      0;  // /proc/vmstat's refault count, this tick  // freed per byte asked, learned from the kernel (ReclaimStep.h)

  Endpoints endpoints_;
  Notifier notifier_;
  TimePoint started_{};
  std::string lastAction_;
  // Totals since start (targets that went away included).
  std::uint64_t reclaimedTotal_ = 0, stepsTotal_ = 0, partialTotal_ = 0;
  double writeSecondsTotal_ = 0;
  std::uint64_t dropcaches_ = 0, compactions_ = 0, floorRaises_ = 0, idlePeriods_ = 0;

  bool stop_ = false;
  int exitCode_ = 0;
  std::uint64_t sampleErrors_ = 0;
  TimePoint lastSampleErrorLog_{};
};

}  // namespace reclaimd::controller

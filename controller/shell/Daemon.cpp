#include "controller/shell/Daemon.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <ctime>

#include "base/Event.h"
#include "base/Files.h"
#include "base/Log.h"
#include "base/Quantities.h"
#include "cgroup/Mountinfo.h"
#include "controller/ExitCodes.h"
#include "controller/KernelAccess.h"
#include "controller/Probe.h"
#include "controller/operate/ProcessStats.h"
#include "controller/shell/Turn.h"
#include "policies/Guard.h"

namespace reclaimd::controller {

using namespace std::chrono;

namespace {

constexpr int kRankSignals = 0, kRankPressure = 1, kRankEndpoints = 2, kRankTimer = 3, kRankReload = 4;

sigset_t daemonSignals() {
  sigset_t mask;
  sigemptyset(&mask);
  for (int s : {SIGTERM, SIGINT, SIGHUP, SIGUSR1, SIGUSR2, SIGALRM})
    sigaddset(&mask, s);
  return mask;
}

// Unreadable (or no cgroup v2 line), reclaimd names no cgroup its own, ignoring the error: its
// CPU then counts as its cgroup's like anyone's, which can only keep that cgroup busier.
std::string ownCgroup(const Paths& paths) {
  auto text = readFileAt(AT_FDCWD, paths.proc("self/cgroup"));
  return text ? cgroup::parseProcCgroup(*text).value_or("") : "";
}

// An engine time as local wall-clock time, "HH:MM:SS".
std::string wallClock(TimePoint at, TimePoint now) {
  const auto wall = system_clock::now() - duration_cast<system_clock::duration>(now - at);
  const std::time_t t = system_clock::to_time_t(wall);
  std::tm tm{};
  if (localtime_r(&t, &tm) == nullptr) return "?";  // the time out of range: status says "?" for it
  char text[16];
  const std::size_t n = std::strftime(text, sizeof text, "%H:%M:%S", &tm);
  return std::string(text, n);
}

}  // namespace

Result<void> blockDaemonSignals() {
  const sigset_t mask = daemonSignals();
  if (pthread_sigmask(SIG_BLOCK, &mask, nullptr) != 0) return errnoError(errno, "pthread_sigmask");
  // A status or metrics client that hangs up mid-answer must not kill the daemon.
  if (::signal(SIGPIPE, SIG_IGN) == SIG_ERR) return errnoError(errno, "signal(SIGPIPE)");
  return {};
}

Daemon::Daemon(DaemonOptions options, policies::Policy policy, const Clock& clock)
    : options_(std::move(options)),
      clock_(clock),
      engine_(std::move(policy), EngineSetup{options_.dryRun, ownCgroup(options_.paths), logs(Severity::Trace)}),
      pressure_(options_.paths.procRoot) {
  const long hz = ::sysconf(_SC_CLK_TCK);
  if (hz > 0) tick_ = nanoseconds(1'000'000'000 / hz);
}

void saySkippedDropIns(const std::string& configPath) {
  if (configPath.empty()) return;
  for (const std::string& path : policies::skippedDropIns(configPath))
    emit(Event(Severity::Warn, "dropin_skipped")
             .add("file", path)
             .add("reason", "drop-ins are read only when named *.yaml"));
}

Result<void> Daemon::setUp() {
  if (auto blocked = blockDaemonSignals(); !blocked) return blocked;
  const sigset_t mask = daemonSignals();
  signals_.reset(::signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC));
  if (!signals_) return errnoError(errno, "signalfd");
  // The YAML is read by a fresh, bounded process first (policies/Guard.h): a file that makes
  // yaml-cpp loop is rejected like any invalid one, and a stop meanwhile ends the check.
  reloader_.emplace([path = options_.configPath](int cancelFd) {
    policies::ParseGuard guard;
    guard.cancelFd = cancelFd;
    return policies::loadPolicyFileGuarded(path, guard);
  });
  if (auto opened = reloader_->open(); !opened) return opened;
  timer_.reset(::timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC));
  if (!timer_) return errnoError(errno, "timerfd_create");
  auto loop = Loop::create();
  if (!loop) return loop.error();
  loop_.emplace(std::move(*loop));
  auto reader = proc::Reader::open(options_.paths.procRoot);
  if (!reader) return reader.error();
  proc_.emplace(std::move(*reader));
  sensors_.emplace(*proc_, nullptr, pressure_, tick_);
  actuator_.emplace(
      options_.paths, nullptr, pressure_, [this] { return stopPending(); }, [this] { return probeWithRoot(); },
      [this](Events events) { log_.write(events, clock_.now()); });
  if (auto recording = startRecording(); !recording) return recording;
  return listen();
}

Result<void> Daemon::startRecording() {
  if (options_.recordPath.empty()) return {};
  auto recorder = Recorder::create(options_.recordPath, options_.recordLimit, [](const std::string& why) {
    emit(Event(Severity::Warn, "record_ended").add("reason", why));
  });
  if (!recorder) return recorder.error();
  recorder_ = std::move(*recorder);
  recorder_->begin(engine_.setup(), options_.policyFiles);
  return {};
}

Result<void> Daemon::listen() {
  if (auto r = loop_->add(
          signals_.get(), [this] { onSignal(); }, kRankSignals);
      !r)
    return r;
  auto onPressure = [this] {
    betweenTurns(engine_, *sensors_, *actuator_, clock_, recorder_.get());
    flushEvents();
  };
  if (auto r = loop_->add(pressure_.fd(), onPressure, kRankPressure); !r) return r;
  if (auto r = loop_->add(
          reloader_->readyFd(), [this] { onReloaded(); }, kRankReload);
      !r)
    return r;
  for (int fd : endpoints_.fds()) {
    if (auto r = loop_->add(
            fd, [this, fd] { endpoints_.handle(fd, clock_.now()); }, kRankEndpoints);
        !r)
      return r;
  }
  return loop_->add(
      timer_.get(), [this] { onTimer(); }, kRankTimer);
}

// The probe, and the cgroup root opened for the tree's adapters when memory.reclaim is usable.
Capabilities Daemon::probeWithRoot() {
  Capabilities caps = probe(options_.paths);
  if (caps.cgroupRoot.empty() || !caps.reclaimWritable) {
    tracker_.reset();
  } else if (!tracker_) {
    auto dir = openAt(AT_FDCWD, caps.cgroupRoot, O_RDONLY | O_DIRECTORY);
    if (dir) {
      tracker_.emplace(std::move(*dir));
    } else {
      caps.reclaimWritable = false;
      caps.reclaimProblem = "the cgroup root could not be opened (" + dir.error().message() + ")";
    }
  }
  Tracker* tracker = tracker_ ? &*tracker_ : nullptr;
  sensors_->setTracker(tracker);
  actuator_->setTracker(tracker);
  return caps;
}

void Daemon::applyProbe(const char* why) {
  const Capabilities caps = probeWithRoot();
  if (recorder_) recorder_->caps(caps, why);
  engine_.setCapabilities(caps, why);
  flushEvents();
  betweenTurns(engine_, *sensors_, *actuator_, clock_, recorder_.get());  // the scopes to watch
}

int Daemon::run() {
  if (auto opened = endpoints_.open(options_.endpoints); !opened) {
    emit(Event(Severity::Error, "setup_failed").add("error", opened.error().message()));
    return endpointsExitCode(opened.error());
  }
  endpoints_.setRenderers([this] { return formatStatusJson(report()); }, [this] { return formatMetrics(report()); });
  if (auto ok = setUp(); !ok) {
    emit(Event(Severity::Error, "setup_failed").add("error", ok.error().message()));
    return kExitFailure;
  }
  applyProbe("start");
  emit(Event(Severity::Debug, "probe").add("found", describe(engine_.capabilities())));
  if (engine_.mode().unusable) {
    emit(Event(Severity::Error, "unusable").add("reason", engine_.mode().reason));
    return kExitUnavailable;
  }
  const auto& p = engine_.policy();
  emit(Event(Severity::Info, "start")
           .add("mode", toString(engine_.mode().mode))
           .add("dry_run", options_.dryRun)
           .add("grace", formatDuration(p.idle.grace))
           .add("interval", formatDuration(p.idle.interval))
           .add("sample_period", formatDuration(p.idle.samplePeriod))
           .add("threshold_pct", p.idle.thresholdPercent, 3)
           .add("floor_mib", formatMiB(p.reclaim.floor))
           .add("compact", p.reclaim.compact && engine_.capabilities().compactMemory)
           .add("rules", p.rules.size()));
  if (engine_.mode().mode == policies::Mode::Gradual && p.trims()) {
    if (auto advice = lruAdvice(probeLru(options_.paths.sysRoot))) emit(std::move(*advice));
  }
  started_ = clock_.now();
  turn();  // the first sample is the baseline; take it now rather than a period late
  notifier_.ready(statusLine());
  if (auto looped = loop_->run(); !looped) {
    emit(Event(Severity::Error, "loop_failed").add("error", looped.error().message()));
    exitCode_ = kExitFailure;
  }
  // A reload under way gives way to the stop; it is reported as rejected.
  if (auto left = reloader_->cancel(); left && !*left) rejectReload(left->error());
  notifier_.stopping();
  endpoints_.stop();  // the last metrics (reclaimd_up 0), logged while the log is up
  return exitCode_;
}

void Daemon::onSignal() {
  signalfd_siginfo info{};
  while (::read(signals_.get(), &info, sizeof info) == static_cast<ssize_t>(sizeof info)) {
    switch (info.ssi_signo) {
      case SIGTERM:
      case SIGINT:
        emit(Event(Severity::Info, "stop").add("signal", info.ssi_signo == SIGTERM ? "SIGTERM" : "SIGINT"));
        loop_->stop();
        break;
      case SIGHUP: reload(); break;
      default:
        emit(Event(Severity::Info, "signal_ignored")
                 .add("signal", sigabbrev_np(static_cast<int>(info.ssi_signo)))
                 .add("from_pid", info.ssi_pid));
        break;
    }
  }
}

void Daemon::onTimer() {
  std::uint64_t expirations = 0;
  // EAGAIN: nothing to drain (the timer was re-armed since it fired); the turn is due anyway.
  while (::read(timer_.get(), &expirations, sizeof expirations) == static_cast<ssize_t>(sizeof expirations)) {
  }
  turn();
}

bool Daemon::stopPending() const {
  // Blocked signals wait as pending until the signalfd is read: peek without consuming.
  sigset_t pending;
  if (sigpending(&pending) != 0) return false;
  return sigismember(&pending, SIGTERM) == 1 || sigismember(&pending, SIGINT) == 1;
}

void Daemon::turn() {
  const TimePoint now = clock_.now();
  TimePoint wake = runTurn(engine_, *sensors_, *actuator_, clock_, now, recorder_.get());
  retainTargets();
  flushEvents();
  notifier_.watchdog(now);
  if (notifier_.enabled()) notifier_.status(statusLine());
  endpoints_.newTurn();
  endpoints_.writeMetricsFile([this] { return formatMetrics(report()); }, now);
  endpoints_.keepStatusSocket(now);
  // systemd's watchdog is pinged from the turn: never sleep past its deadline.
  if (auto deadline = notifier_.watchdogDeadline()) wake = std::min(wake, *deadline);
  armTimer(wake);
}

// The cgroups' open files follow the engine's targets and their aims, after every turn: a target
// gone closes its cgroup's files, and so does any other cgroup a turn read (the quiet cgroups a
// scan names as candidates), or their fds would pin removed cgroups and add up to the fd limit.
void Daemon::retainTargets() {
  if (!tracker_) return;
  // The same targets and aims as last time, and nothing opened since: the open files are those.
  std::vector<std::uint64_t> kept;
  kept.reserve(2 * engine_.targets().size());
  for (const TargetState& t : engine_.targets()) {
    kept.push_back(t.id);
    kept.push_back(t.trim.aim ? t.trim.aim->inode : 0);
  }
  if (kept == kept_ && !tracker_->openedSinceRetain()) return;
  kept_ = std::move(kept);
  std::vector<CgroupRef> keep;
  for (const TargetState& t : engine_.targets()) {
    keep.push_back(t.ref());
    if (t.trim.aim) keep.push_back(CgroupRef{t.trim.aim->path, t.trim.aim->inode});
  }
  tracker_->retain(keep);
}

void Daemon::armTimer(TimePoint at) {
  // Relative to the injected clock's now, so the loop follows whatever clock drives it.
  const nanoseconds in = std::max(nanoseconds(1), duration_cast<nanoseconds>(at - clock_.now()));
  itimerspec spec{};
  spec.it_value.tv_sec = in.count() / 1'000'000'000;
  spec.it_value.tv_nsec = in.count() % 1'000'000'000;
  if (::timerfd_settime(timer_.get(), 0, &spec, nullptr) != 0) {
    emit(Event(Severity::Error, "timer_failed").add("error", errnoError(errno, "timerfd_settime").message()));
    exitCode_ = kExitFailure;
    loop_->stop();
  }
}

void Daemon::reload() {
  notifier_.reloading();
  if (options_.configPath.empty()) {
    emit(Event(Severity::Info, "reload")
             .add("result", "unchanged")
             .add("reason", "no --config file; the built-in policy stays"));
    notifier_.ready(statusLine());
    return;
  }
  if (auto started = reloader_->request(); !started) {
    rejectReload(started.error());
    notifier_.ready(statusLine());
  }
}

void Daemon::rejectReload(const Error& error) {
  emit(Event(Severity::Error, "reload")
           .add("result", "rejected")
           .add("keeping", "previous")
           .add("error", error.message()));
}

void Daemon::onReloaded() {
  auto loaded = reloader_->take();
  if (!loaded) return;
  if (!*loaded) {
    rejectReload(loaded->error());
    if (!reloader_->busy()) notifier_.ready(statusLine());
    return;
  }
  // A recording holds one policy: it ends where another begins.
  if (recorder_) recorder_->end("reload");
  engine_.setPolicy(std::move(**loaded));
  saySkippedDropIns(options_.configPath);
  applyProbe("reload");
  const auto& p = engine_.policy();
  emit(Event(Severity::Info, "reload")
           .add("result", "applied")
           .add("mode", toString(engine_.mode().mode))
           .add("grace", formatDuration(p.idle.grace))
           .add("floor_mib", formatMiB(p.reclaim.floor))
           .add("rules", p.rules.size()));
  turn();  // judge at once under the new settings, and reschedule
  if (!reloader_->busy()) notifier_.ready(statusLine());
}

void Daemon::flushEvents() {
  log_.write(engine_.takeEvents(), clock_.now());
}

Status Daemon::snapshot(bool withProcess) const {
  Status s;
  s.version = RECLAIMD_VERSION_STRING;
  s.dryRun = options_.dryRun;
  const TimePoint now = clock_.now();
  s.uptimeSeconds = duration<double>(now - started_).count();
  const double unixNow = duration<double>(system_clock::now().time_since_epoch()).count();
  engine_.fill(s, now, unixNow, [now](TimePoint at) { return wallClock(at, now); });
  if (withProcess) {
    if (auto process = readProcessStatus(options_.paths)) s.process = *process;
  }
  return s;
}

Status Daemon::report() {
  Status s = snapshot(true);
  if (sensors_) engine_.fillReclaimable(s, takeReadings(engine_.statusReads(), *sensors_));
  return s;
}

std::string Daemon::statusLine() const {
  const EffectiveMode& m = engine_.mode();
  std::string line = toString(m.mode);
  if (m.mode == policies::Mode::Gradual) line += std::string(" (") + toString(m.format) + ")";
  line += std::string(", machine ") + toString(engine_.verdict().state);
  const Status s = snapshot(false);
  line += ", reclaimed " + formatBytes(s.reclaimedBytes) + " in " + std::to_string(s.steps) + " steps";
  if (!s.pressure.empty() && s.pressure.front().scope == "machine" && s.pressure.front().backedOff)
    line += ", backed off (pressure)";
  if (auto at = engine_.lastActionAt()) line += ", last: " + wallClock(*at, clock_.now()) + " " + engine_.lastAction();
  return line;
}

}  // namespace reclaimd::controller

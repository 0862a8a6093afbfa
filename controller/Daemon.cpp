#include "controller/Daemon.h"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <csignal>
#include <cstring>
#include <ctime>
#include <future>
#include <memory>
#include <thread>

#include "base/Log.h"
#include "base/Units.h"
#include "cgroup/Mountinfo.h"
#include "controller/ExitCodes.h"
#include "controller/LogText.h"
#include "policies/Loader.h"
#include "proc/ProcStat.h"

namespace reclaimd::controller {

using namespace std::chrono;

namespace {

// A malformed /proc/stat is logged once a minute at most, with a count, not every second.
constexpr nanoseconds kSampleErrorLogEvery = 60s;
// How long dropcache waits for sync before dropping what is clean.
constexpr nanoseconds kSyncWait = 2s;

// Runs sync() on a detached thread; true when it finished within `wait`. A sync that never
// returns keeps only its own thread (in the kernel), not the loop.
bool syncWithin(nanoseconds wait) {
  auto done = std::make_shared<std::promise<void>>();
  std::future<void> finished = done->get_future();
  // The daemon's signals stay blocked in this thread too (it inherits the mask).
  std::thread([done] {
    ::sync();
    done->set_value();
  }).detach();
  return finished.wait_for(wait) == std::future_status::ready;
}

sigset_t daemonSignals() {
  sigset_t mask;
  sigemptyset(&mask);
  sigaddset(&mask, SIGTERM);
  sigaddset(&mask, SIGINT);
  sigaddset(&mask, SIGHUP);
  return mask;
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
    : options_(std::move(options)), policy_(std::move(policy)), clock_(clock), detector_(idleConfigOf(policy_.idle)) {
  const long hz = ::sysconf(_SC_CLK_TCK);
  if (hz > 0) tick_ = nanoseconds(1'000'000'000 / hz);
}

Result<void> Daemon::setUp() {
  if (auto blocked = blockDaemonSignals(); !blocked) return blocked;
  const sigset_t mask = daemonSignals();
  signals_.reset(::signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC));
  if (!signals_) return errnoError(errno, "signalfd");
  timer_.reset(::timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC));
  if (!timer_) return errnoError(errno, "timerfd_create");
  epoll_.reset(::epoll_create1(EPOLL_CLOEXEC));
  if (!epoll_) return errnoError(errno, "epoll_create1");
  if (auto opened = endpoints_.open(options_.endpoints); !opened) return opened;
  for (int fd : {signals_.get(), timer_.get(), watch_.fd(), endpoints_.fd()}) {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = fd;
    if (::epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, fd, &ev) != 0) return errnoError(errno, "epoll_ctl");
  }
  auto stat = KeptFile::open(AT_FDCWD, options_.paths.proc(kProcStat));
  if (!stat) return stat.error();
  stat_ = std::move(*stat);
  auto meminfo = KeptFile::open(AT_FDCWD, options_.paths.proc(kProcMeminfo));
  if (!meminfo) return meminfo.error();
  meminfo_ = std::move(*meminfo);
  return {};
}

void Daemon::applyProbe(const char* why) {
  caps_ = probe(options_.paths);
  EffectiveMode chosen = chooseMode(policy_.reclaimMode(), caps_, !policy_.rules.empty());
  // Targets (and their idle histories) survive a reload or re-probe on the same cgroup root;
  // the next walk re-resolves their rules.
  const bool sameRoot = targets_ && caps_.cgroupRoot == cgroupRootPath_;
  if (chosen.mode == policies::Mode::Gradual && sameRoot) {
    targets_->invalidate();
  } else {
    targets_.reset();
    cgroupRoot_.reset();
    cgroupRootPath_.clear();
  }
  if (chosen.mode == policies::Mode::Gradual && !targets_) {
    auto dir = openAt(AT_FDCWD, caps_.cgroupRoot, O_RDONLY | O_DIRECTORY);
    if (dir) {
      cgroupRoot_ = std::move(*dir);
      cgroupRootPath_ = caps_.cgroupRoot;
      std::string own;
      if (auto text = readFileAt(AT_FDCWD, options_.paths.proc("self/cgroup"))) {
        own = cgroup::parseProcCgroup(*text).value_or("");
      }
      targets_.emplace(cgroupRoot_.get(), own);
    } else {
      chosen = chooseMode(policies::Mode::DropCache, caps_, !policy_.rules.empty());
      chosen.reason = "the cgroup root could not be opened (" + dir.error().message() + "); " + chosen.reason;
    }
  }
  const bool changed = !(chosen == mode_) || chosen.reason != mode_.reason;
  mode_ = chosen;
  if (!changed) return;
  auto level = mode_.fellBack ? spdlog::level::warn : spdlog::level::info;
  spdlog::log(level, "event=mode requested={} effective={} format={} why={} reason={}", toString(policy_.reclaimMode()),
              toString(mode_.mode), mode_.mode == policies::Mode::Gradual ? toString(mode_.format) : "-", why,
              quoted(mode_.reason));
}

// Detectors for the idle settings that rules use beyond the machine's; history is kept for
// settings that stay, so a reload does not restart their grace periods.
void Daemon::applyPolicy() {
  detector_.reconfigure(idleConfigOf(policy_.idle));
  std::vector<RuleDetector> next;
  const IdleConfig machine = idleConfigOf(policy_.idle);
  for (const auto& rule : policy_.rules) {
    if (rule.idleSource == policies::IdleSource::Cgroup) continue;
    const IdleConfig c = idleConfigOf(rule.idle);
    auto same = [&](const IdleConfig& o) {
      return o.thresholdPercent == c.thresholdPercent && o.grace == c.grace && o.interval == c.interval;
    };
    if (same(machine)) continue;
    bool have = false;
    for (const auto& d : next)
      have = have || same(d.config);
    if (have) continue;
    auto old =
        std::find_if(ruleDetectors_.begin(), ruleDetectors_.end(), [&](const auto& d) { return same(d.config); });
    if (old != ruleDetectors_.end())
      next.push_back(std::move(*old));
    else
      next.push_back(RuleDetector{c, IdleDetector(c), {}});
  }
  ruleDetectors_ = std::move(next);
  // Targets' scopes take the new settings as they are made again.
  if (targets_) {
    for (Target& t : targets_->all())
      t.pressure.reset();
  }
}

const IdleVerdict& Daemon::systemVerdict(const policies::IdleSettings& idle) const {
  const IdleConfig c = idleConfigOf(idle);
  for (const auto& d : ruleDetectors_) {
    if (d.config.thresholdPercent == c.thresholdPercent && d.config.grace == c.grace &&
        d.config.interval == c.interval) {
      return d.verdict;
    }
  }
  return verdict_;
}

int Daemon::run() {
  if (auto ok = setUp(); !ok) {
    spdlog::error("event=setup_failed error={}", quoted(ok.error().message()));
    return kExitFailure;
  }
  applyPolicy();
  applyProbe("start");
  setUpMachinePressure();  // after the probe: it may use the cgroup root
  spdlog::debug("event=probe {}", quoted(describe(caps_)));
  if (mode_.unusable) {
    spdlog::error("event=unusable reason={}", quoted(mode_.reason));
    return kExitUnavailable;
  }
  const auto& idle = policy_.idle;
  spdlog::info(
      "event=start mode={} dry_run={} grace={} interval={} sample_period={} threshold_pct={} floor_mib={} "
      "compact={} rules={}",
      toString(mode_.mode), options_.dryRun, formatDuration(idle.grace), formatDuration(idle.interval),
      formatDuration(idle.samplePeriod), idle.thresholdPercent, formatMiB(policy_.reclaim.floor),
      policy_.reclaim.compact && caps_.compactMemory, policy_.rules.size());
  started_ = clock_.now();
  onTimer();  // the first sample is the baseline; take it now rather than a period late
  notifier_.ready(statusLine());

  while (!stop_) {
    epoll_event events[4];
    int n = ::epoll_wait(epoll_.get(), events, 4, -1);
    if (n < 0) {
      if (errno == EINTR) continue;
      spdlog::error("event=epoll_failed error={}", quoted(std::strerror(errno)));
      return kExitFailure;
    }
    // Signals first: a SIGTERM that arrives with a timer tick should not wait for a step.
    for (int i = 0; i < n; ++i) {
      if (events[i].data.fd == signals_.get()) onSignal();
    }
    for (int i = 0; i < n && !stop_; ++i) {
      if (events[i].data.fd == watch_.fd()) handlePressureEvents(clock_.now());
      if (events[i].data.fd == endpoints_.fd()) {
        endpoints_.serve([this] { return formatStatus(snapshot()); }, [this] { return formatMetrics(snapshot()); },
                         clock_.now());
      }
    }
    for (int i = 0; i < n && !stop_; ++i) {
      if (events[i].data.fd == timer_.get()) onTimer();
    }
  }
  notifier_.stopping();
  endpoints_.writeMetricsFile([this] { return formatMetrics(snapshot()); }, clock_.now(), true);
  return exitCode_;
}

void Daemon::onSignal() {
  signalfd_siginfo info{};
  while (::read(signals_.get(), &info, sizeof info) == static_cast<ssize_t>(sizeof info)) {
    switch (info.ssi_signo) {
      case SIGTERM:
      case SIGINT:
        spdlog::info("event=stop signal={}", info.ssi_signo == SIGTERM ? "SIGTERM" : "SIGINT");
        stop_ = true;
        break;
      case SIGHUP: reload(); break;
      default: break;
    }
  }
}

void Daemon::onTimer() {
  std::uint64_t expirations = 0;
  while (::read(timer_.get(), &expirations, sizeof expirations) == static_cast<ssize_t>(sizeof expirations)) {
  }
  tick(clock_.now());
}

bool Daemon::stopRequested() const {
  // Peek, do not consume: the loop reads the signal once the step has returned.
  pollfd p{signals_.get(), POLLIN, 0};
  return ::poll(&p, 1, 0) > 0 && (p.revents & POLLIN);
}

Result<void> Daemon::armTimer(TimePoint at) {
  // steady_clock is CLOCK_MONOTONIC, the timer's clock: an absolute deadline never drifts.
  const auto ns = duration_cast<nanoseconds>(at.time_since_epoch()).count();
  itimerspec spec{};
  spec.it_value.tv_sec = ns / 1'000'000'000;
  spec.it_value.tv_nsec = ns % 1'000'000'000;
  if (spec.it_value.tv_sec == 0 && spec.it_value.tv_nsec == 0) spec.it_value.tv_nsec = 1;  // 0 disarms
  if (::timerfd_settime(timer_.get(), TFD_TIMER_ABSTIME, &spec, nullptr) != 0) {
    return errnoError(errno, "timerfd_settime");
  }
  return {};
}

void Daemon::scheduleNext(TimePoint now, const IdleVerdict& verdict) {
  const auto& idle = policy_.idle;
  const nanoseconds regular = idle.samplePeriod;
  // The sample period while busy: the tightest any busy detector asks for, regular when none is.
  nanoseconds period = regular;
  if (verdict.spanPercent > idle.thresholdPercent)
    period = std::min(period, busySamplePeriod(idle, detector_.config()));
  // Candidate wake-ups: predictions of when something becomes idle, if it stays quiet.
  std::vector<std::optional<TimePoint>> predicted;
  if (!verdict.idle()) predicted.push_back(detector_.predictIdle());
  for (const auto& d : ruleDetectors_) {
    if (d.verdict.spanPercent > d.config.thresholdPercent) period = std::min(period, busySamplePeriod(idle, d.config));
    if (!d.verdict.idle()) predicted.push_back(d.detector.predictIdle());
  }
  if (targets_) {
    for (const Target& t : targets_->all()) {
      if (!t.cpuIdle) continue;
      if (t.cpuVerdict.spanPercent > t.gov.idle.thresholdPercent) period = std::min(period, fastestSamplePeriod(idle));
      if (!t.cpuVerdict.idle()) predicted.push_back(t.cpuIdle->predictIdle());
    }
  }
  TimePoint next = now + (idle.predict ? period : regular);
  if (idle.predict) {
    // A millisecond's margin so the sample lands after the predicted instant, not on it.
    for (const auto& p : predicted) {
      if (p && *p + 1ms < next) next = std::max(*p + 1ms, now + 1ms);
    }
  }
  if (targets_ && !policy_.rules.empty())
    next = std::min(next, std::max(targets_->lastWalk() + kWalkPeriod, now + 1ms));
  // systemd's watchdog is pinged from the tick: never sleep past half its timeout.
  if (auto deadline = notifier_.watchdogDeadline()) next = std::min(next, std::max(*deadline, now + 1ms));
  if (auto armed = armTimer(next); !armed) {
    spdlog::error("event=timer_failed error={}", quoted(armed.error().message()));
    stop_ = true;
    exitCode_ = kExitFailure;
  }
}

void Daemon::reportSampleError(const Error& error) {
  ++sampleErrors_;
  const TimePoint now = clock_.now();
  if (sampleErrors_ == 1 || now - lastSampleErrorLog_ >= kSampleErrorLogEvery) {
    spdlog::warn("event=sample_skipped error={} count={}", quoted(error.message()), sampleErrors_);
    lastSampleErrorLog_ = now;
  }
}

std::optional<CpuSample> Daemon::readSample(TimePoint now) {
  auto text = stat_.read();
  if (!text) {
    reportSampleError(text.error());
    return std::nullopt;
  }
  auto times = proc::parseProcStat(*text);
  if (!times) {
    reportSampleError(times.error());
    return std::nullopt;
  }
  CpuSample s;
  s.at = now;
  s.busy = tick_ * static_cast<std::int64_t>(times->busy());
  s.total = tick_ * static_cast<std::int64_t>(times->total());
  s.own = processCpuTime();
  return s;
}

std::optional<proc::Meminfo> Daemon::readMeminfo() {
  auto text = meminfo_.read();
  if (!text) {
    reportSampleError(text.error());
    return std::nullopt;
  }
  auto mem = proc::parseMeminfo(*text);
  if (!mem) {
    reportSampleError(mem.error());
    return std::nullopt;
  }
  return *mem;
}

void Daemon::tick(TimePoint now) {
  auto sample = readSample(now);
  if (!sample) {
    // A malformed sample is skipped; the windows keep their history.
    notifier_.watchdog(now);
    scheduleNext(now, IdleVerdict{});
    return;
  }
  verdict_ = detector_.add(*sample);
  for (auto& d : ruleDetectors_)
    d.verdict = d.detector.add(*sample);
  const IdleVerdict& v = verdict_;
  if (v.reset) spdlog::info("event=idle_reset reason=\"cpu counters went backwards\"");
  if (v.periodEnded) {
    spdlog::info("event=idle_left window_busy_pct={:.3f} interval_busy_pct={:.3f}", v.windowPercent, v.intervalPercent);
    period_ = PeriodState{};
  }
  if (v.periodStarted) {
    ++idlePeriods_;
    auto mem = readMeminfo();
    spdlog::info("event=idle_entered window_busy_pct={:.3f} interval_busy_pct={:.3f} reclaimable_mib={}",
                 v.windowPercent, v.intervalPercent, mem ? formatMiB(mem->reclaimable()) : "?");
  }
  if (!v.idle()) {
    spdlog::trace("event=tick state={} window_busy_pct={:.3f} interval_busy_pct={:.3f}", toString(v.state),
                  v.windowPercent, v.intervalPercent);
  }
  // With a trigger the kernel wakes us; totals are read when polling is the only way, and while
  // backed off (the kernel sends one event per window; the calm period needs every window).
  if (machinePressure_ && mode_.mode != policies::Mode::Disabled &&
      (machinePressure_->eventFd() < 0 || machinePressure_->backoff().active())) {
    samplePressure(*machinePressure_, now);
  }
  const bool machinePressed = machinePressure_ && machinePressure_->backoff().active();
  switch (mode_.mode) {
    case policies::Mode::Disabled: break;
    case policies::Mode::DropCache: {
      const DropPlan plan = decideDrop(v, period_, machinePressed, policy_.reclaim.compact && caps_.compactMemory);
      if (v.idle() && machinePressed && !period_.dropped) {
        if (!std::exchange(dropPausedLogged_, true)) spdlog::info("event=dropcache_paused reason=\"memory pressure\"");
      }
      if (plan.dropCache) {
        dropPausedLogged_ = false;
        if (auto mem = readMeminfo()) dropCaches(*mem);
        if (plan.compact && !stopRequested()) compact();
      }
      break;
    }
    case policies::Mode::Gradual: gradualTick(now, v); break;
  }
  notifier_.watchdog(now);
  if (notifier_.enabled()) notifier_.status(statusLine());
  endpoints_.writeMetricsFile([this] { return formatMetrics(snapshot()); }, now);
  scheduleNext(now, v);
}

void Daemon::dropCaches(const proc::Meminfo& before) {
  period_.dropped = true;
  if (options_.dryRun) {
    spdlog::info("event=dropcache dry_run=true reclaimable_mib={}", formatMiB(before.reclaimable()));
    return;
  }
  const auto start = SteadyClock::now();
  // Dirty pages are not dropped, so sync first; after the grace period there are few and it is
  // short. A hung filesystem (a dead NFS server) must not hang the loop, and with it SIGTERM:
  // sync runs on its own thread, and after kSyncWait caches are dropped without it (what is
  // still dirty simply stays).
  if (!syncWithin(kSyncWait)) {
    spdlog::warn("event=sync_slow waited_ms={:.0f} reason=\"a filesystem is slow to sync; dropping what is clean\"",
                 toMs(kSyncWait));
  }
  auto result = writeFileAt(AT_FDCWD, options_.paths.proc(kDropCaches), "3");
  const auto took = SteadyClock::now() - start;
  const auto after = readMeminfo();
  const std::uint64_t afterBytes = after ? after->reclaimable() : before.reclaimable();
  if (!result) {
    spdlog::error("event=dropcache error={} took_ms={:.1f}", quoted(result.error().message()), toMs(took));
    return;
  }
  ++dropcaches_;
  noteAction("dropped caches, " + formatMiB(before.reclaimable() > afterBytes ? before.reclaimable() - afterBytes : 0) +
             " MiB freed");
  spdlog::info("event=dropcache freed_mib={} took_ms={:.1f} reclaimable_before_mib={} reclaimable_after_mib={}",
               formatMiBSigned(static_cast<std::int64_t>(before.reclaimable()) - static_cast<std::int64_t>(afterBytes)),
               toMs(took), formatMiB(before.reclaimable()), formatMiB(afterBytes));
}

void Daemon::compact() {
  period_.compacted = true;
  if (options_.dryRun) {
    spdlog::info("event=compact dry_run=true");
    return;
  }
  const auto start = SteadyClock::now();
  auto result = writeFileAt(AT_FDCWD, options_.paths.proc(kCompactMemory), "1");
  const auto took = SteadyClock::now() - start;
  if (!result) {
    spdlog::warn("event=compact error={} took_ms={:.1f}", quoted(result.error().message()), toMs(took));
    return;
  }
  ++compactions_;
  spdlog::info("event=compact took_ms={:.1f}", toMs(took));
}

void Daemon::reload() {
  notifier_.reloading();
  if (options_.configPath.empty()) {
    spdlog::info("event=reload result=unchanged reason=\"no --config file; the built-in policy stays\"");
    notifier_.ready(statusLine());
    return;
  }
  auto loaded = policies::loadPolicyFile(options_.configPath);
  if (!loaded) {
    spdlog::error("event=reload result=rejected keeping=previous error={}", quoted(loaded.error().message()));
    notifier_.ready(statusLine());
    return;
  }
  policy_ = std::move(*loaded);
  applyPolicy();
  applyProbe("reload");
  setUpMachinePressure();
  spdlog::info("event=reload result=applied mode={} grace={} floor_mib={} rules={}", toString(mode_.mode),
               formatDuration(policy_.idle.grace), formatMiB(policy_.reclaim.floor), policy_.rules.size());
  tick(clock_.now());  // judge at once under the new settings, and reschedule
  notifier_.ready(statusLine());
}

void Daemon::noteAction(const std::string& what) {
  const auto t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  localtime_r(&t, &tm);
  char when[32];
  const std::size_t n = std::strftime(when, sizeof when, "%H:%M:%S", &tm);
  lastAction_ = std::string(when, n) + " " + what;
}

std::string Daemon::statusLine() const {
  std::string line = std::string(toString(mode_.mode));
  if (mode_.mode == policies::Mode::Gradual) line += std::string(" (") + toString(mode_.format) + ")";
  line += std::string(", machine ") + toString(verdict_.state);
  line += ", reclaimed " + formatBytes(reclaimedTotal_) + " in " + std::to_string(stepsTotal_) + " steps";
  if (machinePressure_ && machinePressure_->backoff().active()) line += ", backed off (pressure)";
  if (!lastAction_.empty()) line += ", last: " + lastAction_;
  return line;
}

Status Daemon::snapshot() const {
  Status s;
  s.version = RECLAIMD_VERSION_STRING;
  s.requestedMode = toString(policy_.reclaimMode());
  s.effectiveMode = toString(mode_.mode);
  s.format = toString(mode_.format);
  s.reason = mode_.reason;
  s.dryRun = options_.dryRun;
  s.uptimeSeconds = std::chrono::duration<double>(clock_.now() - started_).count();
  s.idleState = toString(verdict_.state);
  s.windowBusyPercent = verdict_.windowPercent;
  s.idlePeriods = idlePeriods_;
  s.reclaimedBytes = reclaimedTotal_;
  s.steps = stepsTotal_;
  s.partial = partialTotal_;
  s.writeSeconds = writeSecondsTotal_;
  s.dropcaches = dropcaches_;
  s.compactions = compactions_;
  s.floorRaises = floorRaises_;
  auto scope = [](const PressureScope& p) {
    return ScopeStatus{p.label(), p.watch(), p.backoff().active(), p.events, p.backoffs, p.backoff().scale()};
  };
  if (machinePressure_) s.pressure.push_back(scope(*machinePressure_));
  if (targets_) {
    for (const Target& t : targets_->all()) {
      if (t.pressure) s.pressure.push_back(scope(*t.pressure));
      s.targets.push_back(TargetStatus{t.label(), t.gov.rule < 0 ? "machine" : std::to_string(t.gov.rule + 1),
                                       toString(t.gov.mode), t.idle, t.pressure && t.pressure->backoff().active(),
                                       t.floor(), t.reclaimedBytes, t.steps, t.partialSteps, t.writeSeconds,
                                       t.lastAction});
    }
  }
  return s;
}

}  // namespace reclaimd::controller

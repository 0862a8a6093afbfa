#include "controller/Daemon.h"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <csignal>
#include <utility>
#include <cstring>

#include "base/Log.h"
#include "base/Units.h"
#include "controller/ExitCodes.h"
#include "controller/ReclaimStep.h"
#include "policies/Loader.h"
#include "policies/Step.h"
#include "proc/ProcStat.h"

namespace reclaimd::controller {

using namespace std::chrono;

namespace {

// A step's writes stop after this much time even if bytes remain; the next tick goes on.
// Keeps each loop turn short however slow the kernel is.
constexpr nanoseconds kStepBudget = 1s;
// A malformed /proc/stat is logged once a minute at most, with a count, not every second.
constexpr nanoseconds kSampleErrorLogEvery = 60s;
// While the last span was busy, samples come this many times faster than the policy's
// sample_period (200 ms by default): the moment work ends is then known to a fifth of a
// second, so the grace period is measured from it, not from the next regular sample. On a
// busy machine the extra reads cost nothing that matters.
constexpr int kBusySampleSpeedup = 5;
constexpr nanoseconds kMinSamplePeriod = 100ms;

IdleConfig idleConfig(const policies::IdleSettings& s) {
  return IdleConfig{s.thresholdPercent, s.grace, s.interval};
}

std::string quoted(const std::string& text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') out.push_back('\\');
    out.push_back(c == '\n' ? ' ' : c);
  }
  return out + "\"";
}

double toMs(nanoseconds d) { return duration<double, std::milli>(d).count(); }

}  // namespace

Daemon::Daemon(DaemonOptions options, policies::Policy policy, const Clock& clock)
    : options_(std::move(options)), policy_(policy), clock_(clock), detector_(idleConfig(policy.idle)) {
  const long hz = ::sysconf(_SC_CLK_TCK);
  if (hz > 0) tick_ = nanoseconds(1'000'000'000 / hz);
}

namespace {

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
  ::signal(SIGPIPE, SIG_IGN);
  return {};
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
  for (int fd : {signals_.get(), timer_.get()}) {
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
  const nanoseconds regular = policy_.idle.samplePeriod;
  const bool busy = policy_.idle.predict && verdict.spanPercent > policy_.idle.thresholdPercent;
  TimePoint next = now + (busy ? std::max(kMinSamplePeriod, regular / kBusySampleSpeedup) : regular);
  if (policy_.idle.predict && !verdict.idle()) {
    // A millisecond's margin so the sample lands after the predicted instant, not on it.
    if (auto predicted = detector_.predictIdle(); predicted && *predicted + 1ms < next) {
      next = std::max(*predicted + 1ms, now + 1ms);
    }
  }
  if (auto armed = armTimer(next); !armed) {
    spdlog::error("event=timer_failed error={}", quoted(armed.error().message()));
    stop_ = true;
    exitCode_ = kExitFailure;
  }
}

void Daemon::applyProbe(const char* why) {
  caps_ = probe(options_.paths);
  EffectiveMode chosen = chooseMode(policy_.mode, caps_);
  const bool changed = !(chosen == mode_) || chosen.reason != mode_.reason;
  mode_ = chosen;
  rootReclaim_.reset();
  cgroupDir_.reset();
  if (mode_.mode == policies::Mode::Gradual) {
    auto dir = openAt(AT_FDCWD, caps_.cgroupRoot, O_RDONLY | O_DIRECTORY);
    auto file = dir ? cgroup::ReclaimFile::open(dir->get(), "/") : Result<cgroup::ReclaimFile>(dir.error());
    if (file) {
      cgroupDir_ = std::move(*dir);
      rootReclaim_ = std::move(*file);
    } else {
      mode_ = chooseMode(policies::Mode::DropCache, caps_);
      mode_.reason = "memory.reclaim could not be opened (" + file.error().message() + "); " + mode_.reason;
    }
  }
  if (!changed) return;
  auto level = mode_.fellBack ? spdlog::level::warn : spdlog::level::info;
  spdlog::log(level, "event=mode requested={} effective={} format={} why={} reason={}", toString(policy_.mode),
              toString(mode_.mode),
              mode_.mode == policies::Mode::Gradual ? toString(mode_.format) : "-", why,
              quoted(mode_.reason));
}

int Daemon::run() {
  if (auto ok = setUp(); !ok) {
    spdlog::error("event=setup_failed error={}", quoted(ok.error().message()));
    return kExitFailure;
  }
  applyProbe("start");
  spdlog::debug("event=probe {}", quoted(describe(caps_)));
  if (mode_.unusable) {
    spdlog::error("event=unusable reason={}", quoted(mode_.reason));
    return kExitUnavailable;
  }
  const auto& idle = policy_.idle;
  spdlog::info(
      "event=start mode={} dry_run={} grace={} interval={} sample_period={} threshold_pct={} floor_mib={} "
      "compact={}",
      toString(mode_.mode), options_.dryRun, formatDuration(idle.grace), formatDuration(idle.interval),
      formatDuration(idle.samplePeriod), idle.thresholdPercent, formatMiB(policy_.reclaim.floor),
      policy_.reclaim.compact && caps_.compactMemory);
  onTimer();  // the first sample is the baseline; take it now rather than a period late

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
      if (events[i].data.fd == timer_.get()) onTimer();
    }
  }
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
    // A malformed sample is skipped; the window keeps its history.
    scheduleNext(now, IdleVerdict{});
    return;
  }
  const IdleVerdict verdict = detector_.add(*sample);
  scheduleNext(now, verdict);
  if (verdict.reset) spdlog::info("event=idle_reset reason=\"cpu counters went backwards\"");
  if (verdict.periodEnded) {
    spdlog::info("event=idle_left window_busy_pct={:.3f} interval_busy_pct={:.3f}", verdict.windowPercent,
                 verdict.intervalPercent);
    period_ = PeriodState{};
  }
  if (!verdict.idle()) {
    spdlog::trace("event=tick state={} window_busy_pct={:.3f} interval_busy_pct={:.3f}", toString(verdict.state),
                  verdict.windowPercent, verdict.intervalPercent);
    return;
  }
  auto mem = readMeminfo();
  if (!mem) return;
  if (verdict.periodStarted) {
    spdlog::info("event=idle_entered window_busy_pct={:.3f} interval_busy_pct={:.3f} reclaimable_mib={}",
                 verdict.windowPercent, verdict.intervalPercent, formatMiB(mem->reclaimable()));
  }
  const Plan plan = decide(verdict, *mem, mode_, policy_.reclaim, caps_.compactMemory, period_);
  if (!plan.dropCache && plan.reclaimBytes == 0 && !plan.compact) {
    spdlog::trace("event=tick state=idle action=none why={}", quoted(plan.why));
    return;
  }
  carryOut(plan, *mem);
}

void Daemon::carryOut(const Plan& plan, const proc::Meminfo& before) {
  if (plan.dropCache) dropCaches(before);
  if (plan.reclaimBytes > 0) reclaimStep(plan.reclaimBytes, before);
  if (plan.compact && !stop_ && !stopRequested()) compact();
}

void Daemon::reclaimStep(std::uint64_t bytes, const proc::Meminfo& before) {
  if (options_.dryRun) {
    spdlog::info("event=reclaim_step cgroup=/ dry_run=true asked_mib={} reclaimable_mib={}", formatMiB(bytes),
                 formatMiB(before.reclaimable()));
    period_.stalledAt = before.reclaimable();  // a dry run frees nothing: do not repeat each tick
    return;
  }
  const auto format = mode_.format;
  auto& file = *rootReclaim_;
  bool first = true;
  const StepLimits limits{bytes, policy_.reclaim.floor, policy_.reclaim.chunk, kStepBudget};
  const StepOutcome step = runStep(
      limits,
      [&]() -> std::optional<std::uint64_t> {
        if (std::exchange(first, false)) return before.reclaimable();  // read this tick already
        auto mem = readMeminfo();
        return mem ? std::optional(mem->reclaimable()) : std::nullopt;
      },
      [&](std::uint64_t chunk) { return file.write(chunk, format); },
      [&] { return stopRequested(); },
      [&](std::uint64_t asked, const cgroup::ReclaimWrite& w, std::int64_t freed) {
        spdlog::debug("event=reclaim_chunk cgroup=/ asked_mib={} freed_mib={} took_ms={:.1f} status={} errno={}",
                      formatMiB(asked), formatMiBSigned(freed), toMs(w.took), toString(w.status), w.err);
      });
  auto level = step.status == cgroup::ReclaimStatus::Failed ? spdlog::level::err : spdlog::level::info;
  spdlog::log(level,
              "event=reclaim_step cgroup=/ asked_mib={} requested_mib={} freed_mib={} chunks={} took_ms={:.1f} "
              "end={} status={} errno={} reclaimable_before_mib={} reclaimable_after_mib={} floor_mib={}",
              formatMiB(bytes), formatMiB(step.requestedBytes), formatMiBSigned(step.freed()), step.chunks,
              toMs(step.took), toString(step.end), toString(step.status), step.err, formatMiB(step.before),
              formatMiB(step.after), formatMiB(policy_.reclaim.floor));
  switch (step.status) {
    case cgroup::ReclaimStatus::Done:
    case cgroup::ReclaimStatus::Interrupted: break;
    case cgroup::ReclaimStatus::Partial:
      // EAGAIN with (almost) nothing freed: the kernel has nothing more to give now.
      if (step.freed() < static_cast<std::int64_t>(policies::kMinRequestBytes)) period_.stalledAt = step.after;
      break;
    case cgroup::ReclaimStatus::Unsupported: {
      const EffectiveMode was = mode_;
      applyProbe("EINVAL from memory.reclaim");
      if (mode_ == was) {
        // The probe still believes in this format: do not send the kernel the same EINVAL
        // every tick; stay on dropcache until a reload or restart.
        mode_ = chooseMode(policies::Mode::DropCache, caps_);
        mode_.fellBack = true;
        spdlog::warn("event=mode effective={} reason=\"memory.reclaim rejected a request with EINVAL after a "
                     "re-probe accepted its format\"",
                     toString(mode_.mode));
      }
      break;
    }
    case cgroup::ReclaimStatus::Gone:
    case cgroup::ReclaimStatus::Failed: period_.stalledAt = step.after; break;
  }
}

void Daemon::dropCaches(const proc::Meminfo& before) {
  period_.dropped = true;
  if (options_.dryRun) {
    spdlog::info("event=dropcache dry_run=true reclaimable_mib={}", formatMiB(before.reclaimable()));
    return;
  }
  const auto start = SteadyClock::now();
  // Dirty pages are not dropped; after the grace period there are few, so sync is short.
  ::sync();
  auto result = writeFileAt(AT_FDCWD, options_.paths.proc(kDropCaches), "3");
  const auto took = SteadyClock::now() - start;
  const auto after = readMeminfo();
  const std::uint64_t afterBytes = after ? after->reclaimable() : before.reclaimable();
  if (!result) {
    spdlog::error("event=dropcache error={} took_ms={:.1f}", quoted(result.error().message()), toMs(took));
    return;
  }
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
  spdlog::info("event=compact took_ms={:.1f}", toMs(took));
}

void Daemon::reload() {
  if (options_.configPath.empty()) {
    spdlog::info("event=reload result=unchanged reason=\"no --config file; the built-in policy stays\"");
    return;
  }
  auto loaded = policies::loadPolicyFile(options_.configPath);
  if (!loaded) {
    spdlog::error("event=reload result=rejected keeping=previous error={}", quoted(loaded.error().message()));
    return;
  }
  policy_ = *loaded;
  detector_.reconfigure(idleConfig(policy_.idle));
  applyProbe("reload");
  tick(clock_.now());  // judge at once under the new settings, and reschedule
  spdlog::info("event=reload result=applied mode={} grace={} floor_mib={}", toString(mode_.mode),
               formatDuration(policy_.idle.grace), formatMiB(policy_.reclaim.floor));
}

}  // namespace reclaimd::controller

#include "controller/engine/IdleDetector.h"

#include <algorithm>

namespace reclaimd::controller {

const char* toString(IdleState state) {
  switch (state) {
    case IdleState::Warmup: return "warmup";
    case IdleState::Busy: return "busy";
    case IdleState::Blocked: return "blocked";
    case IdleState::Idle: return "idle";
  }
  return "?";
}

void IdleDetector::reset() {
  history_.clear();
  lastRead_.reset();
  lost_ = std::chrono::nanoseconds(0);
  inPeriod_ = false;
  busySince_.reset();
  workEndedAt_.reset();
}

namespace {
// Real counters stay far below 2^63 ns (292 years of CPU time); a replayed recording need not.
std::chrono::nanoseconds plus(std::chrono::nanoseconds a, std::chrono::nanoseconds b) {
  return a + std::min(b, std::chrono::nanoseconds::max() - a);
}

std::chrono::nanoseconds nanosecondsOf(double value) {
  return std::chrono::nanoseconds(static_cast<std::int64_t>(std::clamp(value, 0.0, 0x1p62)));
}

bool isWork(TimePoint since, TimePoint until, std::chrono::nanoseconds interval) {
  return until - since > 2 * interval;
}
}  // namespace

TimePoint IdleDetector::workEnd() const {
  const CpuSample& last = history_.back();
  const CpuSample& first = history_.front();
  const double wall = static_cast<double>((last.at - first.at).count());
  const double rate = wall > 0 ? static_cast<double>((last.total - first.total).count()) / wall : 1.0;
  double allowance = config_.thresholdPercent / 100.0 * rate * static_cast<double>(config_.interval.count());
  for (std::size_t k = history_.size() - 1; k > 0; --k) {
    const CpuSample& a = history_[k - 1];
    const CpuSample& b = history_[k];
    const double busy = std::max(0.0, static_cast<double>(((b.busy - a.busy) - (b.own - a.own)).count()));
    if (busy > allowance) {
      // Busy time packed at the span's start on every CPU: the earliest end the counters allow,
      // so the grace it starts is never later than the truth.
      const double span = static_cast<double>((b.at - a.at).count());
      const double wallNs = rate > 0 ? std::min(span, (busy - allowance) / rate) : span;
      return a.at + std::chrono::nanoseconds(static_cast<std::int64_t>(wallNs));
    }
    allowance -= busy;
  }
  return first.at;
}

std::optional<TimePoint> IdleDetector::graceEnd() const {
  if (busySince_ && isWork(*busySince_, history_.back().at, config_.interval))
    return workEnd() + config_.grace;
  if (workEndedAt_) return *workEndedAt_ + config_.grace;
  return std::nullopt;
}

const CpuSample* IdleDetector::sampleAtOrBefore(TimePoint t) const {
  const CpuSample* found = nullptr;
  for (const auto& s : history_) {
    if (s.at > t) break;
    found = &s;
  }
  return found;
}

double IdleDetector::busyPercent(const CpuSample& from, const CpuSample& to) const {
  const auto total = to.total - from.total;
  // No CPU time passed (two samples inside one tick): nothing proves the span was quiet.
  if (total <= std::chrono::nanoseconds(0)) return 100.0;
  // Own work is subtracted span by span; tick sampling can make a short span's difference
  // slightly negative, which means "nothing but us".
  const auto busy = std::max((to.busy - from.busy) - (to.own - from.own), std::chrono::nanoseconds(0));
  return 100.0 * static_cast<double>(busy.count()) / static_cast<double>(total.count());
}

void IdleDetector::prune(TimePoint now) {
  // Keep one sample at or before the start of the longest span as its anchor.
  const TimePoint horizon = now - std::max(config_.grace, config_.interval);
  while (history_.size() >= 2 && history_[1].at <= horizon)
    history_.pop_front();
}

CpuSample IdleDetector::withLostTicks(const CpuSample& sample) {
  if (lastRead_ && sample.cpus > 0) {
    const CpuSample& last = *lastRead_;
    const auto counted = sample.busy - last.busy;
    if (sample.own - last.own > counted) {
      const double wall = static_cast<double>((sample.at - last.at).count()) * sample.cpus;
      const double shortfall = wall - static_cast<double>((sample.total - last.total).count());
      if (shortfall > kLostTicksShare * wall) lost_ = plus(lost_, nanosecondsOf(shortfall));
    }
  }
  lastRead_ = sample;
  CpuSample held = sample;
  held.busy = plus(held.busy, lost_);
  held.total = plus(held.total, lost_);
  return held;
}

IdleVerdict IdleDetector::add(const CpuSample& read) {
  IdleVerdict verdict;
  if (lastRead_) {
    const CpuSample& last = *lastRead_;
    if (read.busy < last.busy || read.total < last.total || read.own < last.own || read.at < last.at) {
      verdict.reset = true;
      verdict.periodEnded = inPeriod_;
      reset();
    }
  }
  const CpuSample sample = withLostTicks(read);
  history_.push_back(sample);
  prune(sample.at);
  if (history_.size() >= 2) verdict.spanPercent = busyPercent(history_[history_.size() - 2], sample);

  const CpuSample* windowStart = sampleAtOrBefore(sample.at - config_.grace);
  const CpuSample* intervalStart = sampleAtOrBefore(sample.at - config_.interval);
  if (intervalStart == nullptr) intervalStart = &history_.front();
  if (intervalStart != &history_.back()) verdict.intervalPercent = busyPercent(*intervalStart, sample);
  trackRun(verdict.intervalPercent > config_.thresholdPercent);

  if (windowStart == nullptr) {
    verdict.state = IdleState::Warmup;
    return verdict;
  }
  verdict.windowPercent = busyPercent(*windowStart, sample);
  const bool windowQuiet = verdict.windowPercent <= config_.thresholdPercent;
  const bool intervalQuiet = verdict.intervalPercent <= config_.thresholdPercent;
  const auto graceEnds = graceEnd();
  const bool graceOver = inPeriod_ || !graceEnds || sample.at >= *graceEnds;
  if (!windowQuiet || !graceOver) {
    verdict.state = IdleState::Busy;
    verdict.periodEnded = verdict.periodEnded || inPeriod_;
    inPeriod_ = false;
  } else if (!intervalQuiet) {
    verdict.state = IdleState::Blocked;
  } else {
    verdict.state = IdleState::Idle;
    verdict.periodStarted = !inPeriod_;
    inPeriod_ = true;
  }
  return verdict;
}

TimePoint IdleDetector::quietAt(std::chrono::nanoseconds length) const {
  using std::chrono::nanoseconds;
  const CpuSample& last = history_.back();
  const TimePoint now = last.at;
  // CPU time accrues at (number of CPUs) x wall time; measured over the history we have.
  const CpuSample& first = history_.front();
  const double wall = static_cast<double>((last.at - first.at).count());
  const double rate = wall > 0 ? static_cast<double>((last.total - first.total).count()) / wall : 1.0;
  const double share = config_.thresholdPercent / 100.0;
  // Anchor k is the span's start for t in [k.at + length, k+1.at + length). With no more
  // work, the busy time in the span is fixed while its total grows with t, so the earliest
  // quiet t in a segment solves busy <= share * (total so far + rate * (t - now)).
  for (std::size_t k = 0; k < history_.size(); ++k) {
    const CpuSample& a = history_[k];
    const TimePoint segmentStart = std::max(now, a.at + length);
    const TimePoint segmentEnd = k + 1 < history_.size() ? history_[k + 1].at + length : TimePoint::max();
    if (segmentStart >= segmentEnd) continue;
    const double busy = std::max(0.0, static_cast<double>(((last.busy - a.busy) - (last.own - a.own)).count()));
    const double totalSoFar = static_cast<double>((last.total - a.total).count());
    const double needed = rate > 0 ? (busy / share - totalSoFar) / rate : 0.0;
    // Clamped: an old anchor under a tiny threshold can need longer than a duration holds.
    const TimePoint t = std::max(segmentStart, now + nanosecondsOf(needed));
    if (t < segmentEnd) return t;
  }
  return now + length;  // unreachable: the newest sample as anchor always gives a quiet span
}

void IdleDetector::trackRun(bool intervalBusy) {
  const TimePoint now = history_.back().at;
  if (intervalBusy) {
    if (!busySince_) busySince_ = now;
    lastBusyAt_ = now;
    return;
  }
  if (busySince_ && isWork(*busySince_, lastBusyAt_, config_.interval)) workEndedAt_ = workEnd();
  busySince_.reset();
}

std::optional<TimePoint> IdleDetector::predictIdle() const {
  if (history_.empty()) return std::nullopt;
  const TimePoint window = quietAt(config_.grace);
  const TimePoint interval = quietAt(config_.interval);
  const TimePoint quiet = std::max(window, interval);
  if (inPeriod_) return quiet;
  return std::max(quiet, graceEnd().value_or(quiet));
}

}  // namespace reclaimd::controller

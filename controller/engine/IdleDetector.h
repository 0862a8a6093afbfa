// The idle detector: is the machine (or, later, a cgroup) quiet enough, for long enough,
// to give its cache back?
//
// Semantics (the seed's, at finer time resolution):
// - Idle when the busy share is at or under the threshold over the current interval (a
//   sliding span, 10 s by default) AND over a rolling window as long as the grace period.
// - The window must be full: right after start or a reset, the grace period runs in full.
// - A short burst blocks the current tick (the interval is over the threshold) but keeps
//   the window's history: when the burst is small the idle period goes on right after it.
// - The grace is sustained quiet: after work (a run of busy intervals longer than two
//   intervals) the machine is idle only once the whole grace has passed since the work ended,
//   whatever the window's average says. Light work (1 % of the CPUs for a minute) would
//   otherwise average out under the threshold part-way through the grace. The work ended at
//   the earliest moment after which the machine did less than one quiet interval's allowance
//   of work, so heavy work keeps the window's timing (within threshold x interval). Shorter
//   bursts are judged by the window alone, so that periodic noise cannot postpone the grace.
// - The idle period ends only when the window goes busy, or on a reset.
// - Counters going backwards (CPU hotplug, a new cgroup under an old name) reset the tracker.
// - Busy time is reduced by the sampler's own CPU time (`own`), so reclaimd's reads,
//   reclaim writes and compaction never hold back or end an idle period.
// - Ticks a starved VM lost count as busy. /proc/stat counts busy time by timer ticks but idle
//   time by the clock, and `own` is exact: a vCPU that the host does not run while it works
//   loses ticks, so the counted busy time can fall below our own, and subtracting it would
//   erase the work that ran beside us. A span whose own CPU time exceeds its counted busy time
//   and whose counted CPU time falls short of wall time x CPUs by more than kLostTicksShare
//   adds the shortfall to busy (and total): it is time the CPUs ran without being counted.
// Pure: fed with samples that carry their own timestamps; never reads a clock or a file.
#pragma once

#include <chrono>
#include <deque>
#include <optional>

#include "base/Clock.h"

namespace reclaimd::controller {

struct IdleConfig {
  double thresholdPercent = 0.5;
  std::chrono::nanoseconds grace = std::chrono::seconds(120);
  std::chrono::nanoseconds interval = std::chrono::seconds(10);
};

// Cumulative counters at one instant. `busy` and `total` are CPU time summed over the CPUs
// being judged (total = busy + idle); `own` is the sampler's own CPU time, also cumulative.
struct CpuSample {
  TimePoint at;
  std::chrono::nanoseconds busy{0};
  std::chrono::nanoseconds total{0};
  std::chrono::nanoseconds own{0};
  unsigned cpus = 0;  // online CPUs, for wall time x CPUs; 0 when unknown (nothing is added)
};

// A shortfall of counted CPU time under this share of wall time x CPUs is rounding (USER_HZ
// ticks, the moment of the read), not lost ticks.
inline constexpr double kLostTicksShare = 0.05;

enum class IdleState {
  Warmup,   // not enough history yet for a full window
  Busy,     // the window is over the threshold
  Blocked,  // the window is quiet but the current interval is not: wait, keep the period
  Idle,     // both quiet: act
};

const char* toString(IdleState state);

struct IdleVerdict {
  IdleState state = IdleState::Warmup;
  bool periodStarted = false;  // this sample began an idle period
  bool periodEnded = false;    // this sample ended one (window went busy, or a reset)
  bool reset = false;          // counters went backwards: history dropped
  double spanPercent = 0;      // busy share since the previous sample
  double intervalPercent = 0;  // busy share of the current interval
  double windowPercent = 0;    // busy share of the window (0 while warming up)

  bool idle() const { return state == IdleState::Idle; }
};

class IdleDetector {
 public:
  explicit IdleDetector(IdleConfig config) : config_(config) {}

  // Adds a sample (timestamps must not go backwards) and judges the state at its time.
  IdleVerdict add(const CpuSample& sample);

  // The earliest time after the last sample at which the machine would be judged idle if it
  // stayed perfectly quiet from now on (the last sample's time when it is idle already);
  // nullopt before the first sample.
  // The daemon wakes exactly then instead of at its next regular sample, so reclaim starts
  // the moment the grace period completes. Exact in the window's history: its precision is
  // that of the samples taken where the work ended (which is why the daemon samples faster
  // while the machine is busy).
  std::optional<TimePoint> predictIdle() const;

  // New settings; the history is kept, so a longer grace simply needs more of it.
  void reconfigure(IdleConfig config) { config_ = config; }
  const IdleConfig& config() const { return config_; }

  bool inIdlePeriod() const { return inPeriod_; }
  // Where the last run of work ended by the detector's reading, never later than the truth:
  // the grace after work runs from it. nullopt when no work is on record since the last reset.
  std::optional<TimePoint> workEnded() const { return workEndedAt_; }
  // The busy share (percent) over all the samples held: during warm-up, the part of the window
  // seen so far (the verdict's windowPercent is 0 until the window is full). nullopt before two
  // samples.
  std::optional<double> heldBusyPercent() const {
    if (history_.size() < 2) return std::nullopt;
    return busyPercent(history_.front(), history_.back());
  }
  // Drops all history; the next sample is a new baseline.
  void reset();

 private:
  // Newest sample at or before `t`, or nullptr when history does not reach back that far.
  const CpuSample* sampleAtOrBefore(TimePoint t) const;
  double busyPercent(const CpuSample& from, const CpuSample& to) const;
  // Earliest t >= the last sample's time at which the span [t - length, t] would be quiet.
  TimePoint quietAt(std::chrono::nanoseconds length) const;
  // The earliest moment after which the history holds at most one quiet interval's allowance
  // of busy time.
  TimePoint workEnd() const;
  // When the grace that follows work ends, if the busy run in progress (taken to end at the
  // last sample) or the last one that ended was work; nullopt when no work is on record.
  std::optional<TimePoint> graceEnd() const;
  // `sample` with the ticks lost since the previous one added to busy and total.
  CpuSample withLostTicks(const CpuSample& sample);
  // Follows runs of busy intervals; a run longer than two intervals that ends is work.
  void trackRun(bool intervalBusy);
  void prune(TimePoint now);

  IdleConfig config_;
  std::deque<CpuSample> history_;  // busy and total with lost ticks added
  std::optional<CpuSample> lastRead_;  // the last sample as read
  std::chrono::nanoseconds lost_{0};   // ticks lost since the last reset, as CPU time
  bool inPeriod_ = false;
  std::optional<TimePoint> busySince_;      // first sample of the busy run in progress
  TimePoint lastBusyAt_{};                  // last sample of that run
  std::optional<TimePoint> workEndedAt_;    // end of the last run that was work
};

}  // namespace reclaimd::controller

// The idle detector's semantics, case by case, with timestamps chosen by the test.
#include <gtest/gtest.h>

#include "controller/engine/IdleDetector.h"

namespace reclaimd::controller {
namespace {

using namespace std::chrono_literals;
using std::chrono::nanoseconds;

// Drives a detector with a simulated machine: per-second samples, a chosen busy share.
class Machine {
 public:
  explicit Machine(IdleConfig config, int cpus = 1) : detector_(config), cpus_(cpus) {}

  // Advances by `step` with `busyCpus` CPUs' worth of work (0.0 .. cpus), of which `ownCpu`
  // was the sampler's own, and samples.
  IdleVerdict advance(nanoseconds step, double busyCpus, nanoseconds ownCpu = 0ns) {
    now_ += step;
    busy_ += nanoseconds(static_cast<std::int64_t>(static_cast<double>(step.count()) * busyCpus));
    total_ += step * cpus_;
    own_ += ownCpu;
    return detector_.add(CpuSample{now_, busy_, total_, own_});
  }
  // Samples every second for `span` at a constant load; returns the last verdict and the
  // time of the first Idle verdict, if any.
  IdleVerdict run(nanoseconds span, double busyCpus, std::optional<nanoseconds>* firstIdle = nullptr) {
    IdleVerdict last;
    for (nanoseconds t = 0ns; t < span; t += 1s) {
      last = advance(1s, busyCpus);
      if (firstIdle && !*firstIdle && last.idle()) *firstIdle = elapsed();
    }
    return last;
  }
  // A second on a VM whose vCPU the host starves: /proc/stat counts only `counted` of the CPU
  // time that ran (busy by ticks; idle by the clock, so the lost ticks are missing from the
  // total too); our own CPU time is exact.
  IdleVerdict starved(double othersCpus, nanoseconds ownCpu, double counted) {
    const double ran = 1e9 * othersCpus + static_cast<double>(ownCpu.count());
    const auto lost = nanoseconds(static_cast<std::int64_t>(ran * (1 - counted)));
    now_ += 1s;
    busy_ += nanoseconds(static_cast<std::int64_t>(ran * counted));
    total_ += 1s * cpus_ - lost;
    own_ += ownCpu;
    return detector_.add(CpuSample{now_, busy_, total_, own_, static_cast<unsigned>(cpus_)});
  }
  // A second in which `busy` was counted, `own` was ours and the counted total fell `short`
  // of the wall time (a read that came late).
  IdleVerdict counted(nanoseconds busy, nanoseconds own, nanoseconds shortOf) {
    now_ += 1s;
    busy_ += busy;
    total_ += 1s * cpus_ - shortOf;
    own_ += own;
    return detector_.add(CpuSample{now_, busy_, total_, own_, static_cast<unsigned>(cpus_)});
  }
  IdleVerdict baseline() { return detector_.add(CpuSample{now_, busy_, total_, own_}); }
  nanoseconds elapsed() const { return now_ - TimePoint{}; }
  IdleDetector& detector() { return detector_; }
  void rewindCounters() { busy_ = total_ = 0ns; }

 private:
  IdleDetector detector_;
  int cpus_;
  TimePoint now_{};
  nanoseconds busy_{0}, total_{0}, own_{0};
};

const IdleConfig kSeed{0.5, 120s, 10s};

TEST(IdleDetector, FirstSampleIsOnlyABaseline) {
  Machine m(kSeed);
  auto v = m.baseline();
  EXPECT_EQ(v.state, IdleState::Warmup);
  EXPECT_FALSE(v.idle());
}

TEST(IdleDetector, QuietMachineIsIdleExactlyWhenTheWindowFills) {
  Machine m(kSeed);
  m.baseline();
  std::optional<nanoseconds> firstIdle;
  auto v = m.run(119s, 0.0, &firstIdle);
  EXPECT_FALSE(firstIdle.has_value()) << "idle before the grace period ended";
  EXPECT_EQ(v.state, IdleState::Warmup);
  v = m.advance(1s, 0.0);
  EXPECT_TRUE(v.idle());
  EXPECT_TRUE(v.periodStarted);
  v = m.advance(1s, 0.0);
  EXPECT_TRUE(v.idle());
  EXPECT_FALSE(v.periodStarted) << "a period starts once";
}

TEST(IdleDetector, GraceRunsFromTheEndOfWork) {
  Machine m(kSeed);
  m.baseline();
  m.run(300s, 1.0);  // a fully busy 1-CPU machine
  const nanoseconds workEnd = m.elapsed();
  std::optional<nanoseconds> firstIdle;
  m.run(200s, 0.0, &firstIdle);
  ASSERT_TRUE(firstIdle.has_value());
  EXPECT_EQ(*firstIdle - workEnd, 120s) << "one-second samples start reclaim on the second the grace ends";
  ASSERT_TRUE(m.detector().workEnded().has_value());
  // Less one quiet interval's allowance of work (0.5 % of 10 s): never later than the truth.
  EXPECT_EQ(*m.detector().workEnded() - TimePoint{}, workEnd - 50ms);
}

TEST(IdleDetector, ShortBurstBlocksTheTickButKeepsThePeriod) {
  Machine m(kSeed);
  m.baseline();
  m.run(130s, 0.0);
  ASSERT_TRUE(m.detector().inIdlePeriod());
  // 200 ms of work: 2 % of the 10 s interval, 0.17 % of the 2-minute window.
  auto v = m.advance(1s, 0.2);
  EXPECT_EQ(v.state, IdleState::Blocked);
  EXPECT_FALSE(v.periodEnded);
  EXPECT_GT(v.intervalPercent, 0.5);
  EXPECT_LE(v.windowPercent, 0.5);
  std::optional<nanoseconds> back;
  const nanoseconds burst = m.elapsed();
  auto after = m.run(15s, 0.0, &back);
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(*back - burst, 10s) << "idle again once the burst leaves the 10 s interval";
  EXPECT_FALSE(after.periodStarted) << "the same idle period goes on";
  EXPECT_TRUE(m.detector().inIdlePeriod());
}

TEST(IdleDetector, WindowGoingBusyEndsThePeriod) {
  Machine m(kSeed);
  m.baseline();
  m.run(130s, 0.0);
  ASSERT_TRUE(m.detector().inIdlePeriod());
  bool ended = false;
  for (int i = 0; i < 5 && !ended; ++i)
    ended = m.advance(1s, 1.0).periodEnded;
  EXPECT_TRUE(ended);
  EXPECT_FALSE(m.detector().inIdlePeriod());
  // The next idle period needs a full quiet window again.
  std::optional<nanoseconds> firstIdle;
  const nanoseconds workEnd = m.elapsed();
  auto v = m.run(130s, 0.0, &firstIdle);
  ASSERT_TRUE(firstIdle.has_value());
  EXPECT_GE(*firstIdle - workEnd, 119s);
  EXPECT_FALSE(v.periodStarted);
}

TEST(IdleDetector, CountersGoingBackwardsReset) {
  Machine m(kSeed);
  m.baseline();
  m.run(130s, 0.0);
  ASSERT_TRUE(m.detector().inIdlePeriod());
  m.rewindCounters();
  auto v = m.advance(1s, 0.0);
  EXPECT_TRUE(v.reset);
  EXPECT_TRUE(v.periodEnded);
  EXPECT_EQ(v.state, IdleState::Warmup);
  std::optional<nanoseconds> firstIdle;
  const nanoseconds resetAt = m.elapsed();
  m.run(125s, 0.0, &firstIdle);
  ASSERT_TRUE(firstIdle.has_value());
  EXPECT_EQ(*firstIdle - resetAt, 120s) << "the grace period runs in full after a reset";
}

TEST(IdleDetector, OwnCpuIsExcluded) {
  Machine m(kSeed);
  m.baseline();
  m.run(130s, 0.0);
  // 300 ms of reclaim and compaction, all of it ours: 3 % of the interval if counted.
  auto v = m.advance(1s, 0.3, 300ms);
  EXPECT_TRUE(v.idle());
  EXPECT_LT(v.intervalPercent, 0.001);
  // The same load from someone else blocks the tick.
  v = m.advance(1s, 0.3, 0ns);
  EXPECT_EQ(v.state, IdleState::Blocked);
}

TEST(IdleDetector, WorkBesideUsOnAStarvedVmIsNotErased) {
  // 3 % of a CPU of someone's work beside 600 ms a second of ours, with two thirds of the
  // ticks lost: counted busy (220 ms) is below our own, so subtracting ours leaves nothing.
  Machine m(kSeed, 2);
  m.baseline();
  IdleVerdict v;
  for (int i = 0; i < 200; ++i) v = m.starved(0.03, 600ms, 0.35);
  EXPECT_EQ(v.state, IdleState::Busy);
  EXPECT_NEAR(v.windowPercent, 1.5, 0.1);
}

TEST(IdleDetector, OurOwnWorkOnAStarvedVmStaysOurs) {
  Machine m(kSeed, 2);
  m.baseline();
  std::optional<nanoseconds> idleAt;
  for (int i = 0; i < 200 && !idleAt; ++i) {
    if (m.starved(0.0, 600ms, 0.35).idle()) idleAt = m.elapsed();
  }
  ASSERT_TRUE(idleAt);
  EXPECT_EQ(*idleAt, 120s);
}

TEST(IdleDetector, TicksRoundedDownAreNotLost) {
  // Our 40 ms counted as 30 ms (USER_HZ rounding) and a total 60 ms short of 2 s (the read
  // came late): rounding, not a starved vCPU, so the second is ours alone.
  Machine m(kSeed, 2);
  m.baseline();
  m.run(130s, 0.0);
  auto v = m.counted(30ms, 40ms, 60ms);
  EXPECT_TRUE(v.idle());
  EXPECT_LT(v.intervalPercent, 0.001);
}

TEST(IdleDetector, ThresholdIsInclusive) {
  Machine m(IdleConfig{0.5, 20s, 10s});
  m.baseline();
  auto v = m.run(30s, 0.005);
  EXPECT_NEAR(v.windowPercent, 0.5, 1e-6);
  EXPECT_TRUE(v.idle());
  Machine over(IdleConfig{0.5, 20s, 10s});
  over.baseline();
  EXPECT_EQ(over.run(30s, 0.0051).state, IdleState::Busy);
}

TEST(IdleDetector, BusyShareIsOfAllCpus) {
  // One CPU of four at 1 %: 0.25 % of the machine, idle.
  Machine m(IdleConfig{0.5, 20s, 10s}, 4);
  m.baseline();
  auto v = m.run(30s, 0.01);
  EXPECT_NEAR(v.windowPercent, 0.25, 1e-6);
  EXPECT_TRUE(v.idle());
}

TEST(IdleDetector, IrregularSamplesAreJudgedByTime) {
  // A late timer (one 7 s gap) neither shortens nor stretches the grace period.
  Machine m(IdleConfig{0.5, 30s, 10s});
  m.baseline();
  m.run(10s, 0.0);
  m.advance(7s, 0.0);
  auto v = m.run(12s, 0.0);
  EXPECT_EQ(v.state, IdleState::Warmup) << "29 s of history is not a 30 s window";
  v = m.advance(1s, 0.0);
  EXPECT_TRUE(v.idle());
}

TEST(IdleDetector, FrozenCountersAreNotIdle) {
  // Counters that do not move (a stuck or fake /proc/stat): nothing proves the span was quiet.
  Machine m(IdleConfig{0.5, 5s, 5s}, 0);
  m.baseline();
  auto v = m.run(10s, 0.0);
  EXPECT_EQ(v.state, IdleState::Busy);
  EXPECT_DOUBLE_EQ(v.windowPercent, 100.0);
}

TEST(IdleDetector, ReconfigureKeepsHistory) {
  Machine m(IdleConfig{0.5, 120s, 10s});
  m.baseline();
  m.run(60s, 0.0);
  m.detector().reconfigure(IdleConfig{0.5, 30s, 10s});
  EXPECT_TRUE(m.advance(1s, 0.0).idle()) << "60 s of quiet history already covers a 30 s grace";
}

TEST(IdleDetector, PredictsTheMomentTheWindowCompletes) {
  // Busy samples every 200 ms (as the daemon takes them while busy), quiet ones every second.
  Machine m(kSeed);
  m.baseline();
  for (int i = 0; i < 150; ++i)
    m.advance(200ms, 1.0);
  const nanoseconds workEnd = m.elapsed();
  m.advance(1s, 0.0);
  auto predicted = m.detector().predictIdle();
  ASSERT_TRUE(predicted.has_value());
  // The grace runs from the moment after which at most one quiet interval's allowance of work
  // was done (0.5 % of 10 s: one busy CPU's last 50 ms).
  EXPECT_EQ(*predicted - TimePoint{}, workEnd + 119950ms);
  // Quiet samples up to just before the prediction are not idle; one just after is.
  while (m.elapsed() + 1s < *predicted - TimePoint{})
    EXPECT_FALSE(m.advance(1s, 0.0).idle());
  EXPECT_FALSE(m.advance((*predicted - TimePoint{}) - m.elapsed() - 10ms, 0.0).idle());
  EXPECT_TRUE(m.advance(11ms, 0.0).idle());
}

TEST(IdleDetector, PredictionWaitsForTheIntervalAfterABurst) {
  Machine m(kSeed);
  m.baseline();
  m.run(130s, 0.0);
  const nanoseconds burst = m.elapsed() + 1s;
  auto v = m.advance(1s, 0.2);
  ASSERT_EQ(v.state, IdleState::Blocked);
  auto predicted = m.detector().predictIdle();
  ASSERT_TRUE(predicted.has_value());
  EXPECT_EQ(*predicted - TimePoint{}, burst + 10s) << "the burst's sample leaves the 10 s interval";
}

TEST(IdleDetector, PredictionDuringWarmupIsTheEndOfTheFirstWindow) {
  Machine m(kSeed);
  m.baseline();
  m.advance(1s, 0.0);
  auto predicted = m.detector().predictIdle();
  ASSERT_TRUE(predicted.has_value());
  EXPECT_EQ(*predicted - TimePoint{}, 120s);
}

TEST(IdleDetector, PredictionIsNeverLaterThanTheTruth) {
  // Mixed loads, then quiet: the first idle sample never comes before the prediction, and a
  // sample taken at the prediction is idle.
  for (double load : {0.3, 0.9, 2.5}) {
    Machine m(IdleConfig{0.5, 30s, 10s}, 4);
    m.baseline();
    for (int i = 0; i < 40; ++i)
      m.advance(200ms, i % 3 == 0 ? load : load / 2);
    m.advance(1s, 0.0);
    auto predicted = m.detector().predictIdle();
    ASSERT_TRUE(predicted.has_value());
    std::optional<nanoseconds> firstIdle;
    while (!firstIdle) {
      auto v = m.advance(100ms, 0.0);
      if (v.idle()) firstIdle = m.elapsed();
    }
    EXPECT_GE(*firstIdle, *predicted - TimePoint{}) << "load " << load;
    EXPECT_LT(*firstIdle - (*predicted - TimePoint{}), 100ms) << "load " << load;
  }
}

// Work at 1 % of the CPUs for 75 s under a 60 s grace: the window's average falls under the
// 0.5 % threshold about 28 s after the work, but the grace promises sustained quiet.
TEST(IdleDetector, GraceIsSustainedAfterLightWork) {
  for (int cpus : {1, 8}) {
    Machine m(IdleConfig{0.5, 60s, 10s}, cpus);
    m.baseline();
    m.run(120s, 0.0);
    ASSERT_TRUE(m.detector().inIdlePeriod());
    m.run(75s, 0.01 * cpus);  // light work, then nothing
    ASSERT_FALSE(m.detector().inIdlePeriod()) << cpus << " CPUs: the work ended the period";
    const nanoseconds workEnd = m.elapsed();
    std::optional<nanoseconds> firstIdle;
    m.run(120s, 0.0, &firstIdle);
    ASSERT_TRUE(firstIdle.has_value());
    // The work's last 5 s carried one interval's allowance (0.5 % of 10 s at 1 %).
    EXPECT_GE(*firstIdle - workEnd, 55s) << cpus << " CPUs";
    EXPECT_LE(*firstIdle - workEnd, 56s) << cpus << " CPUs";
  }
}

TEST(IdleDetector, TheSustainedGraceIsPredicted) {
  Machine m(IdleConfig{0.5, 60s, 10s});
  m.baseline();
  m.run(75s, 0.01);
  m.advance(1s, 0.0);
  auto predicted = m.detector().predictIdle();
  ASSERT_TRUE(predicted.has_value());
  std::optional<nanoseconds> firstIdle;
  while (!firstIdle)
    if (m.advance(100ms, 0.0).idle()) firstIdle = m.elapsed();
  EXPECT_GE(*firstIdle, *predicted - TimePoint{});
  EXPECT_LT(*firstIdle - (*predicted - TimePoint{}), 100ms);
}

// Short bursts after the work (a cron job, a shell prompt) do not restart the grace: they are
// judged by the window, as during an idle period.
TEST(IdleDetector, NoiseAfterWorkDoesNotDelayTheGrace) {
  Machine m(kSeed);
  m.baseline();
  m.run(300s, 1.0);
  const nanoseconds workEnd = m.elapsed();
  m.run(60s, 0.0);
  m.advance(1s, 0.05);  // 50 ms of work: over the interval's threshold, under the window's
  std::optional<nanoseconds> firstIdle;
  m.run(100s, 0.0, &firstIdle);
  ASSERT_TRUE(firstIdle.has_value());
  EXPECT_LE(*firstIdle - workEnd, 121s);
}

// A burst of a few seconds during the grace, heavy enough to make the window busy, is judged
// by the window: the grace then runs from the burst.
TEST(IdleDetector, ABurstDuringTheGraceIsJudgedByTheWindow) {
  Machine m(kSeed);
  m.baseline();
  m.run(300s, 1.0);
  m.run(60s, 0.0);
  m.run(3s, 1.0);
  const nanoseconds burstEnd = m.elapsed();
  std::optional<nanoseconds> firstIdle;
  m.run(200s, 0.0, &firstIdle);
  ASSERT_TRUE(firstIdle.has_value());
  EXPECT_GE(*firstIdle - burstEnd, 110s);
  EXPECT_LE(*firstIdle - burstEnd, 120s);
}

TEST(IdleDetector, SpanPercentIsTheLastSampleAlone) {
  Machine m(kSeed);
  m.baseline();
  EXPECT_NEAR(m.advance(1s, 0.25).spanPercent, 25.0, 1e-6);
  EXPECT_NEAR(m.advance(1s, 0.0).spanPercent, 0.0, 1e-6);
}

// The smallest threshold and the longest grace, and a sample after days without one (the loop was
// stopped): the quiet moment worked out for the old anchor lies further off than a duration holds.
// The machine was busy throughout, so the window is quiet only a whole grace after this sample.
TEST(IdleDetector, PredictionAfterALongBusyGapIsAGraceAway) {
  Machine m(IdleConfig{0.001, 24h, 10s});
  m.baseline();
  m.advance(1s, 0);
  const IdleVerdict v = m.advance(72h, 1.0);
  ASSERT_FALSE(v.idle());
  const auto predicted = m.detector().predictIdle();
  ASSERT_TRUE(predicted.has_value());
  EXPECT_EQ(*predicted, TimePoint{} + m.elapsed() + 24h);
}

}  // namespace
}  // namespace reclaimd::controller

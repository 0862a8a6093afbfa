// The pure decisions: step sizing, the mode chosen for each probe outcome, the per-tick
// plan, and how a step is cut into chunks.
#include <gtest/gtest.h>

#include "controller/engine/Decide.h"
#include "controller/engine/ModeChoice.h"
#include "controller/engine/ReclaimStep.h"
#include "tests/unit/StepDriver.h"
#include "policies/Step.h"

namespace reclaimd::controller {
namespace {

using namespace std::chrono_literals;
using reclaimd::testing::runStep;
using cgroup::ReclaimFormat;
using cgroup::ReclaimStatus;
using policies::Mode;

struct StepCase {
  std::uint64_t memTotal;
  std::uint64_t step;
};

class StepSizeTest : public ::testing::TestWithParam<StepCase> {};

TEST_P(StepSizeTest, RamScaledWithinBounds) {
  EXPECT_EQ(policies::stepBytes(GetParam().memTotal, policies::ReclaimSettings{}), GetParam().step);
}

INSTANTIATE_TEST_SUITE_P(Seed, StepSizeTest,
                         ::testing::Values(StepCase{2 * kGiB, 256 * kMiB},   // 64 MiB, raised to the minimum
                                           StepCase{8 * kGiB, 256 * kMiB},   // exactly 1/32
                                           StepCase{16 * kGiB, 512 * kMiB},  // 1/32
                                           StepCase{32 * kGiB, 1 * kGiB},    // exactly the maximum
                                           StepCase{64 * kGiB, 1 * kGiB}));  // 2 GiB, capped

TEST(StepSize, RequestStopsAtTheFloor) {
  EXPECT_EQ(policies::requestBytes(1000 * kMiB, 128 * kMiB, 256 * kMiB), 256 * kMiB);
  EXPECT_EQ(policies::requestBytes(200 * kMiB, 128 * kMiB, 256 * kMiB), 72 * kMiB);
  EXPECT_EQ(policies::requestBytes(128 * kMiB, 128 * kMiB, 256 * kMiB), 0u);
  EXPECT_EQ(policies::requestBytes(10 * kMiB, 128 * kMiB, 256 * kMiB), 0u);
}

Capabilities fullCaps() {
  Capabilities c;
  c.cgroupRoot = "/sys/fs/cgroup";
  c.memoryController = true;
  c.reclaimWritable = true;
  c.swappinessKey = KeySupport::Supported;
  c.compactMemory = true;
  c.dropCaches = true;
  c.psiAvailable = true;
  return c;
}

struct ModeCase {
  const char* name;
  Mode requested;
  std::function<void(Capabilities&)> tweak;
  Mode expected;
  ReclaimFormat format;
  bool fellBack;
  bool unusable;
};

class ModeChoiceTest : public ::testing::TestWithParam<ModeCase> {};

TEST_P(ModeChoiceTest, FollowsTheProbe) {
  const ModeCase& c = GetParam();
  Capabilities caps = fullCaps();
  c.tweak(caps);
  EffectiveMode m = chooseMode(c.requested, caps);
  EXPECT_EQ(m.mode, c.expected) << m.reason;
  if (m.mode == Mode::Gradual) {
    EXPECT_EQ(m.format, c.format);
  }
  EXPECT_EQ(m.fellBack, c.fellBack);
  EXPECT_EQ(m.unusable, c.unusable);
  EXPECT_FALSE(m.reason.empty());
}

auto keep = [](Capabilities&) {};

INSTANTIATE_TEST_SUITE_P(
    Table, ModeChoiceTest,
    ::testing::Values(
        ModeCase{"kernel_6_12", Mode::Gradual, keep, Mode::Gradual, ReclaimFormat::SwappinessZero, false, false},
        ModeCase{"kernel_6_1_no_swap", Mode::Gradual,
                 [](Capabilities& c) { c.swappinessKey = KeySupport::Unsupported; }, Mode::Gradual,
                 ReclaimFormat::Plain, false, false},
        ModeCase{"kernel_6_1_with_swap", Mode::Gradual,
                 [](Capabilities& c) {
                   c.swappinessKey = KeySupport::Unsupported;
                   c.swapActive = true;
                 },
                 Mode::DropCache, ReclaimFormat::Plain, true, false},
        ModeCase{"key_unknown_with_swap", Mode::Gradual,
                 [](Capabilities& c) {
                   c.swappinessKey = KeySupport::Unknown;
                   c.swapActive = true;
                 },
                 Mode::DropCache, ReclaimFormat::Plain, true, false},
        ModeCase{"swap_with_key_is_fine", Mode::Gradual, [](Capabilities& c) { c.swapActive = true; }, Mode::Gradual,
                 ReclaimFormat::SwappinessZero, false, false},
        ModeCase{"hybrid_no_memory_reclaim", Mode::Gradual,
                 [](Capabilities& c) {
                   c.memoryController = false;
                   c.reclaimWritable = false;
                   c.swappinessKey = KeySupport::Unknown;
                 },
                 Mode::DropCache, ReclaimFormat::Plain, true, false},
        ModeCase{"nothing_writable", Mode::Gradual,
                 [](Capabilities& c) {
                   c.reclaimWritable = false;
                   c.dropCaches = false;
                 },
                 Mode::Disabled, ReclaimFormat::Plain, true, true},
        ModeCase{"dropcache", Mode::DropCache, keep, Mode::DropCache, ReclaimFormat::Plain, false, false},
        ModeCase{"dropcache_unwritable", Mode::DropCache, [](Capabilities& c) { c.dropCaches = false; }, Mode::Disabled,
                 ReclaimFormat::Plain, true, true},
        ModeCase{"disabled", Mode::Disabled, [](Capabilities& c) { c.dropCaches = c.reclaimWritable = false; },
                 Mode::Disabled, ReclaimFormat::Plain, false, false}),
    [](const auto& tc) { return std::string(tc.param.name); });

IdleVerdict idle(bool started = false) {
  IdleVerdict v;
  v.state = IdleState::Idle;
  v.periodStarted = started;
  return v;
}

TEST(DecideDrop, OncePerIdlePeriodAndNotUnderPressure) {
  DropPlan p = decideDrop(idle(true), PeriodState{}, false, true);
  EXPECT_TRUE(p.dropCache);
  EXPECT_TRUE(p.compact);
  PeriodState dropped;
  dropped.dropped = true;
  EXPECT_FALSE(decideDrop(idle(), dropped, false, true).dropCache) << "once per idle period";
  EXPECT_FALSE(decideDrop(idle(), PeriodState{}, true, true).dropCache) << "pressure pauses dropcache";
  EXPECT_FALSE(decideDrop(idle(), PeriodState{}, false, false).compact) << "no compact_memory, or compact: false";
  for (IdleState s : {IdleState::Warmup, IdleState::Busy, IdleState::Blocked}) {
    IdleVerdict v;
    v.state = s;
    EXPECT_FALSE(decideDrop(v, PeriodState{}, false, true).dropCache) << toString(s);
  }
}

// The kernel's answer to one chunk: `err` (0: done) after `took`.
cgroup::ReclaimWrite answer(int err, std::chrono::nanoseconds took) {
  return cgroup::reclaimWritten(err, took, "test/memory.reclaim");
}

// A scripted kernel: a cache of `cache` bytes that each Done chunk shrinks by `ratio` times
// the request (1.0 on 6.12, about 1.2 on 6.1), or with `folio` set by whole folios, one more
// than the request holds (7.2's large folios); answers each chunk with the next scripted
// status and duration, then Done in 10 ms.
struct FakeKernel {
  FakeKernel() = default;
  explicit FakeKernel(std::vector<cgroup::ReclaimWrite> a) : answers(std::move(a)) {}
  std::vector<cgroup::ReclaimWrite> answers;
  std::vector<std::uint64_t> asked;
  std::uint64_t cache = 1000 * kMiB;
  double ratio = 1.0;
  std::uint64_t folio = 0;

  cgroup::ReclaimWrite write(std::uint64_t bytes) {
    asked.push_back(bytes);
    cgroup::ReclaimWrite w{{}, 10ms};
    if (asked.size() <= answers.size()) w = answers[asked.size() - 1];
    if (w.result) {
      const auto freed =
          folio ? (bytes / folio + 1) * folio : static_cast<std::uint64_t>(static_cast<double>(bytes) * ratio);
      cache -= std::min(cache, freed);
    }
    return w;
  }
  StepOutcome run(
      StepLimits limits, std::function<bool()> stop = [] { return false; }) {
    return runStep(
        limits, [this] { return std::optional(cache); }, [this](std::uint64_t b) { return write(b); }, stop);
  }
};

// A kernel whose overshoot is already known (1.0: it frees what it is asked).
StepLimits limits(std::uint64_t step, std::uint64_t floor = 0, std::chrono::nanoseconds budget = 1s) {
  return StepLimits{step, floor, 64 * kMiB, budget, 1.0};
}

// The next step to the 128 MiB floor, from `cache`, with what `learned` taught of the kernel.
StepOutcome nextStep(FakeKernel& k, std::uint64_t cache, const StepOutcome& learned) {
  k.cache = cache;
  k.asked.clear();
  auto next = limits(256 * kMiB, 128 * kMiB);
  next.overshoot = learned.overshoot;
  next.excess = learned.excess;
  return k.run(next);
}

TEST(ReclaimStep, CutsIntoChunks) {
  FakeKernel k;
  StepOutcome s = k.run(limits(200 * kMiB));
  EXPECT_EQ(k.asked, (std::vector<std::uint64_t>{64 * kMiB, 64 * kMiB, 64 * kMiB, 8 * kMiB}));
  EXPECT_EQ(s.requestedBytes, 200 * kMiB);
  EXPECT_EQ(s.chunks, 4);
  EXPECT_EQ(s.status(), ReclaimStatus::Done);
  EXPECT_EQ(s.end, StepEnd::Asked);
  EXPECT_EQ(s.took, 40ms);
  EXPECT_EQ(s.freed(), static_cast<std::int64_t>(200 * kMiB));
}

TEST(ReclaimStep, LastChunkShrinksToLandOnTheFloor) {
  FakeKernel k;
  k.cache = 330 * kMiB;
  StepOutcome s = k.run(limits(256 * kMiB, 128 * kMiB));
  EXPECT_EQ(k.asked, (std::vector<std::uint64_t>{64 * kMiB, 64 * kMiB, 64 * kMiB, 10 * kMiB}));
  EXPECT_EQ(s.after, 128 * kMiB);
  EXPECT_EQ(s.end, StepEnd::Floor);
}

TEST(ReclaimStep, OvershootingKernelIsAimedShort) {
  // 6.1 frees about 20 % more than asked. Nothing known yet: the first chunk aims at half the
  // way to the floor, learns the ratio, and the rest is aimed short by it.
  FakeKernel k;
  k.cache = 100 * kMiB;
  k.ratio = 1.2;
  auto first = limits(256 * kMiB, 32 * kMiB);
  first.overshoot = 0;
  StepOutcome s = k.run(first);
  EXPECT_EQ(k.asked.front(), 34 * kMiB) << "half of the 68 MiB above the floor";
  EXPECT_GE(s.after, 31 * kMiB);
  EXPECT_LE(s.after, 33 * kMiB + 512 * kKiB);
  EXPECT_NEAR(s.overshoot, 1.2, 0.01);
  // The next step starts with what was learned: straight to the floor.
  StepOutcome t = nextStep(k, 330 * kMiB, s);
  EXPECT_EQ(k.asked.front(), 64 * kMiB);
  EXPECT_GE(t.after, 127 * kMiB);
  EXPECT_LE(t.after, 129 * kMiB + 512 * kKiB);
  EXPECT_EQ(t.excess, 0u) << "what the ratio explains is not excess";
}

TEST(ReclaimStep, TheMachinesRoomBoundsWhatACgroupsStepFrees) {
  // A cgroup far above its own floor, on a machine 100 MiB above its own: the step stops at
  // what it freed, not what it asked, or 6.1's 20 % more would take the machine under its floor.
  FakeKernel k;
  k.ratio = 1.2;
  auto step = limits(256 * kMiB, 16 * kMiB);
  step.room = 100 * kMiB;
  StepOutcome s = k.run(step);
  EXPECT_LE(s.freed(), static_cast<std::int64_t>(100 * kMiB));
  EXPECT_GE(s.freed(), static_cast<std::int64_t>(97 * kMiB)) << "and reaches it";
  EXPECT_EQ(s.end, StepEnd::Floor);
}

TEST(ReclaimStep, AKernelThatFreesWholeFoliosIsKeptOffTheFloor) {
  // 7.2 frees whole large folios, up to 2 MiB past a request (2.2 MiB asked freed 4.0 in the
  // VM tests): a step learns it from its chunks and keeps its last request that far short.
  FakeKernel k;
  k.folio = 2 * kMiB;
  k.cache = 333 * kMiB;
  StepOutcome s = k.run(limits(256 * kMiB, 128 * kMiB));
  EXPECT_EQ(s.excess, 2 * kMiB);
  EXPECT_GE(s.after, 128 * kMiB);
  EXPECT_LE(s.after, 131 * kMiB);
  EXPECT_EQ(s.end, StepEnd::Floor);
  // What was learned holds for the next step: 2.2 MiB above the floor is left alone.
  StepOutcome t = nextStep(k, 128 * kMiB + 2200 * kKiB, s);
  EXPECT_TRUE(k.asked.empty()) << "asked " << (k.asked.empty() ? 0 : k.asked.front());
  EXPECT_EQ(t.end, StepEnd::Floor);
}

TEST(ReclaimStep, AtTheFloorAsksNothing) {
  FakeKernel k;
  k.cache = 128 * kMiB + 512 * kKiB;
  StepOutcome s = k.run(limits(256 * kMiB, 128 * kMiB));
  EXPECT_EQ(s.chunks, 0);
  EXPECT_EQ(s.end, StepEnd::Floor);
}

TEST(ReclaimStep, EagainEndsTheStep) {
  FakeKernel k({answer(0, 10ms), answer(EAGAIN, 200ms)});
  StepOutcome s = k.run(limits(256 * kMiB));
  EXPECT_EQ(s.chunks, 2);
  EXPECT_EQ(s.status(), ReclaimStatus::Partial);
  ASSERT_FALSE(s.result);
  EXPECT_EQ(s.result.error().errnoValue(), EAGAIN);
  EXPECT_EQ(s.end, StepEnd::Kernel);
}

TEST(ReclaimStep, StopsBetweenChunksWhenAsked) {
  FakeKernel k;
  int calls = 0;
  StepOutcome s = k.run(limits(1 * kGiB, 0, 10s), [&] { return ++calls > 2; });
  EXPECT_EQ(s.chunks, 2);
  EXPECT_EQ(s.end, StepEnd::Stopped);
}

TEST(ReclaimStep, StopRequestedBeforeTheFirstChunkWritesNothing) {
  FakeKernel k;
  StepOutcome s = k.run(limits(1 * kGiB, 0, 10s), [] { return true; });
  EXPECT_EQ(s.chunks, 0);
  EXPECT_TRUE(k.asked.empty());
}

TEST(ReclaimStep, TimeBudgetBoundsSlowKernels) {
  FakeKernel k({answer(0, 700ms), answer(0, 700ms)});
  StepOutcome s = k.run(limits(1 * kGiB));
  EXPECT_EQ(s.chunks, 2);
  EXPECT_EQ(s.end, StepEnd::Budget);
}

TEST(ReclaimStep, UnsupportedStopsAtOnce) {
  FakeKernel k({answer(EINVAL, 1ms)});
  StepOutcome s = k.run(limits(1 * kGiB));
  EXPECT_EQ(s.chunks, 1);
  EXPECT_EQ(s.status(), ReclaimStatus::Unsupported);
  EXPECT_EQ(s.freed(), 0);
}

TEST(ReclaimStep, UnreadableTargetEndsTheStep) {
  int reads = 0;
  StepOutcome s = runStep(
      limits(1 * kGiB),
      [&]() -> std::optional<std::uint64_t> {
        if (++reads > 1) return std::nullopt;
        return 500 * kMiB;
      },
      [](std::uint64_t) {
        return cgroup::reclaimWritten(0, 1ms, "sim/memory.reclaim");
      },
      [] { return false; });
  EXPECT_EQ(s.chunks, 1);
  EXPECT_EQ(s.end, StepEnd::Unmeasured);
}

}  // namespace
}  // namespace reclaimd::controller

namespace reclaimd::controller {
namespace {

using std::chrono::nanoseconds;

policies::IdleSettings sampling(std::chrono::milliseconds period) {
  policies::IdleSettings s;
  s.samplePeriod = period;
  return s;
}

TEST(BusySampling, PeriodIsTheWindowsSlackWithinBounds) {
  const auto s = sampling(1s);
  EXPECT_EQ(busySamplePeriod(s, IdleConfig{0.5, 120s, 10s}), 600ms);  // the default: 0.5 % of 2 min
  EXPECT_EQ(busySamplePeriod(s, IdleConfig{0.5, 20s, 10s}), 200ms);   // a test's grace: a fifth
  EXPECT_EQ(busySamplePeriod(s, IdleConfig{0.5, 1h, 10s}), 1s);       // never slower than regular
  EXPECT_EQ(busySamplePeriod(s, IdleConfig{2.0, 30s, 10s}), 600ms);
  EXPECT_EQ(busySamplePeriod(sampling(100ms), IdleConfig{0.5, 1s, 1s}), 100ms);  // at least 100 ms
  EXPECT_EQ(busySamplePeriod(sampling(10s), IdleConfig{0.5, 120s, 10s}), 2s);    // a fifth of 10 s
  EXPECT_EQ(fastestSamplePeriod(s), 200ms);
}

// The claim behind the period: with busy samples that far apart, wherever in a period the work
// ends, the predicted end of the grace is never later than with the end known exactly, and
// early by at most the slack. On 1 and 4 CPUs, with 1 or all of them busy.
TEST(BusySampling, PredictionIsNeverLateWhereverWorkEnds) {
  const IdleConfig window{0.5, 120s, 10s};
  const nanoseconds period = busySamplePeriod(sampling(1s), window);
  const nanoseconds slack = 600ms;
  for (int cpus : {1, 4}) {
    for (int busyCpus : {1, cpus}) {
      for (nanoseconds offset = 0ms; offset < period; offset += 50ms) {
        IdleDetector d(window);
        TimePoint now{};
        nanoseconds busy{0}, total{0};
        auto sample = [&](nanoseconds step, nanoseconds busyStep) {
          now += step;
          busy += busyStep;
          total += step * cpus;
          return d.add(CpuSample{now, busy, total, 0ns});
        };
        sample(0ns, 0ns);
        for (int i = 0; i < 100; ++i)
          sample(period, period * busyCpus);
        // The work ends `offset` into the next period; the sample at its end sees the rest quiet.
        const TimePoint workEnd = now + offset;
        sample(period, offset * busyCpus);
        auto predicted = d.predictIdle();
        ASSERT_TRUE(predicted.has_value());
        const nanoseconds late = *predicted - (workEnd + window.grace);
        EXPECT_LE(late, 1ms) << cpus << " CPUs, " << busyCpus << " busy, work ends " << offset.count() << " ns in";
        EXPECT_GE(late, -slack * cpus / busyCpus - period)
            << cpus << " CPUs, " << busyCpus << " busy, work ends " << offset.count() << " ns in";
      }
    }
  }
}

}  // namespace
}  // namespace reclaimd::controller

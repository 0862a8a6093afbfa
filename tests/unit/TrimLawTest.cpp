// The trimming law alone: probe sizes, growth after clean stretches, and what a refault does to
// the step and the stretch.
#include <gtest/gtest.h>

#include <optional>
#include <vector>

#include "tests/unit/TrimLawRounds.h"

namespace reclaimd::controller {
namespace {

using namespace std::chrono_literals;

TEST(TrimLaw, StartsAtOnePercentOrTheSmallestStep) {
  TrimLaw law;
  law.start(TimePoint{}, 1000 * kMiB, kDefault);
  EXPECT_EQ(law.size(1000 * kMiB, kDefault), 10 * kMiB);
  law.start(TimePoint{}, 100 * kMiB, kDefault);
  EXPECT_EQ(law.size(100 * kMiB, kDefault), 4 * kMiB);
  EXPECT_EQ(law.size(3 * kMiB, kDefault), 3 * kMiB) << "never more than lies above the floor";
}

TEST(TrimLaw, DoublesEveryProbeAfterACleanStretchUpToItsCaps) {
  TrimLaw law;
  TimePoint t{};
  law.start(t, 1000 * kMiB, kDefault);
  for (t += 6s; t < TimePoint{} + 60s; t += 6s) {
    law.probed(t, 1000 * kMiB, kDefault);
    EXPECT_EQ(law.step(), 10 * kMiB) << "no growth within the first stretch";
  }
  law.probed(t, 1000 * kMiB, kDefault);
  EXPECT_EQ(law.step(), 20 * kMiB);
  law.probed(t += 6s, 1000 * kMiB, kDefault);
  EXPECT_EQ(law.step(), 40 * kMiB);
  law.probed(t += 6s, 1000 * kMiB, kDefault);
  EXPECT_EQ(law.step(), 64 * kMiB) << "the reclaim chunk";
  law.probed(t += 6s, 100 * kMiB, kDefault);
  EXPECT_EQ(law.step(), 64 * kMiB) << "the step is kept";
  EXPECT_EQ(law.size(100 * kMiB, kDefault), 25 * kMiB) << "the size follows what is left: a quarter of it";
}

// The stretch is the probes' time. At the floor before the work, then five minutes with no
// probe due: the first probe after is no clean stretch's, nor is one after a pause for heavy work.
TEST(TrimLaw, TimeWithoutProbesIsNoCleanStretch) {
  TrimLaw law;
  TimePoint t{};
  law.start(t, 0, kDefault);
  law.probed(t += 6s, 0, kDefault);
  law.probed(t += 5min, 400 * kMiB, kDefault);
  EXPECT_EQ(law.step(), 4 * kMiB) << "the first probe after the floor";
  for (int probe = 1; probe < 10; ++probe) {
    law.probed(t += 6s, 400 * kMiB, kDefault);
    EXPECT_EQ(law.step(), 4 * kMiB) << probe * 6 << " s of probes";
  }
  law.probed(t += 6s, 400 * kMiB, kDefault);
  EXPECT_EQ(law.step(), 8 * kMiB) << "60 s of probes with nothing back";

  law.paused();  // heavy work for five minutes
  law.probed(t += 5min, 400 * kMiB, kDefault);
  EXPECT_EQ(law.step(), 8 * kMiB) << "the first probe after the pause keeps the step";
  law.probed(t += 6s, 400 * kMiB, kDefault);
  EXPECT_EQ(law.step(), 8 * kMiB) << "the stretch began again at the first probe after the pause";
  law.probed(t += 54s, 400 * kMiB, kDefault);
  EXPECT_EQ(law.step(), 16 * kMiB);
}

// A step grown on cold cache, then the target at its floor (a new work's heavy rounds over a
// machine whose cache was all trimmed): what lies above when probes are due again is that work's
// cache, which the grown step knows nothing of. The first probe is the first step again.
TEST(TrimLaw, AStepGrownBeforeTheFloorStartsAgainAfterIt) {
  TrimLaw law;
  TimePoint t{};
  law.start(t, 800 * kMiB, kDefault);
  for (t += 6s; t <= TimePoint{} + 90s; t += 6s)
    law.probed(t, 800 * kMiB, kDefault);
  ASSERT_EQ(law.step(), 64 * kMiB);
  law.probed(t += 6s, 0, kDefault);  // at the floor
  law.paused();                      // the new work, heavy
  EXPECT_EQ(law.size(300 * kMiB, kDefault), 4 * kMiB);
  law.probed(t += 10min, 300 * kMiB, kDefault);
  EXPECT_EQ(law.size(300 * kMiB, kDefault), 4 * kMiB);
  law.probed(t += 6s, 300 * kMiB, kDefault);
  EXPECT_EQ(law.step(), 4 * kMiB) << "and it grows only after a clean stretch";
}

TEST(TrimLaw, ARefaultResetsTheStepAndTheStretch) {
  TrimLaw law;
  TimePoint t{};
  law.start(t, 1000 * kMiB, kDefault);
  for (int i = 0; i < 15; ++i)
    law.probed(t += 6s, 1000 * kMiB, kDefault);
  ASSERT_EQ(law.step(), 64 * kMiB);
  EXPECT_FALSE(law.refaulted(t, 900 * kMiB, notActivated(0), kDefault).has_value())
      << "a first refault is never a hold";
  EXPECT_FALSE(law.held(t));
  EXPECT_EQ(law.step(), 4 * kMiB);
  law.probed(t += 6s, 900 * kMiB, kDefault);
  EXPECT_EQ(law.step(), 4 * kMiB) << "a new clean stretch starts at the refault";
}

// Rounds at the smallest step that bring back under an eighth of what they freed are taking cold
// cache: the clean stretch goes on through them and the step doubles when it is over. A round
// that brings back more starts the stretch again; so does a trickle once the step has grown
// (the edge of the work's cache, which the next larger probes would take).
TEST(TrimLaw, TricklesAtTheSmallestStepDoNotStartTheStretchAgain) {
  TrimLaw law;
  TimePoint t{};
  std::uint64_t back = 0;
  law.start(t, 400 * kMiB, kDefault);
  law.refaulted(t, 400 * kMiB, notActivated(back), kDefault);  // the stretch starts at 0 s
  const auto round = [&](std::uint64_t above) {
    for (int probe = 0; probe < 4; ++probe) {
      law.probed(t += 6s, above, kDefault);
      law.freed(law.step());
    }
  };
  for (int i = 0; i < 2; ++i) {
    round(400 * kMiB);
    back += 1 * kMiB;  // 1 of 16 MiB back
    ASSERT_FALSE(law.refaulted(t, 380 * kMiB, notActivated(back), kDefault));
    EXPECT_EQ(law.lastAnswer(), TrimLaw::StepAnswer::Trickle) << "round " << i;
    EXPECT_EQ(law.step(), 4 * kMiB) << "round " << i;
  }
  law.probed(t += 6s, 360 * kMiB, kDefault);
  EXPECT_EQ(law.step(), 4 * kMiB) << "54 s since the stretch began";
  law.probed(t += 6s, 360 * kMiB, kDefault);
  EXPECT_EQ(law.step(), 8 * kMiB) << "60 s: the trickles did not start it again";
  law.freed(12 * kMiB);
  law.probed(t += 6s, 350 * kMiB, kDefault);
  law.freed(16 * kMiB);
  back += 1 * kMiB;  // 1 of 28 MiB back, from larger probes
  ASSERT_FALSE(law.refaulted(t, 340 * kMiB, notActivated(back), kDefault));
  EXPECT_EQ(law.lastAnswer(), TrimLaw::StepAnswer::Smallest);
  EXPECT_EQ(law.step(), 4 * kMiB);

  round(340 * kMiB);  // 72-90 s
  back += 3 * kMiB;   // 3 of 16 MiB: more than an eighth
  ASSERT_FALSE(law.refaulted(t, 320 * kMiB, notActivated(back), kDefault));
  EXPECT_EQ(law.lastAnswer(), TrimLaw::StepAnswer::Smallest);
  round(320 * kMiB);  // 96-114 s
  round(300 * kMiB);  // 120-138 s: 72 s after the refault at 66 s
  EXPECT_EQ(law.step(), 4 * kMiB) << "the stretch began again at 90 s";
}

// A kernel learning what is hot gives a little back of much that the probes freed: no hold.
TEST(TrimLaw, LittleBackOfMuchFreedIsLearningNotTheBottom) {
  TrimLaw law;
  TimePoint t{};
  law.start(t, 400 * kMiB, kDefault);
  ASSERT_FALSE(law.refaulted(t += 6s, 400 * kMiB, notActivated(10 * kMiB), kDefault));
  law.freed(4 * kMiB);
  EXPECT_FALSE(law.refaulted(t += 1s, 400 * kMiB, notActivated(14 * kMiB), kDefault)) << "too little probed to judge";
  for (int i = 0; i < 30; ++i)
    law.freed(4 * kMiB);
  EXPECT_FALSE(law.refaulted(t += 10s, 290 * kMiB, notActivated(50 * kMiB), kDefault))
      << "40 of 124 MiB back: learning";
  EXPECT_FALSE(law.held(t));
}

// The kernel's first contact with a hot set it has not yet seen come back: every byte the probes
// free comes back for tens of MiB, then the cold cache behind it goes. The first hold waits for a
// quarter of what lies above the floor; a hold after 16 MiB would keep the cold cache for minutes.
TEST(TrimLaw, AFirstContactGivingAllBackIsJudgedOverAQuarterOfTheCache) {
  TrimLaw law;
  TimePoint t{};
  std::uint64_t back = 0;
  law.start(t, 400 * kMiB, kDefault);
  ASSERT_FALSE(law.refaulted(t += 1s, 500 * kMiB, notActivated(back), kDefault));
  for (int i = 0; i < 24; ++i) {  // 96 MiB, all read back: under a quarter of 400
    law.probed(t += 1s, 400 * kMiB, kDefault);
    law.freed(4 * kMiB);
    back += 4 * kMiB;
    EXPECT_FALSE(law.refaulted(t, 500 * kMiB, notActivated(back), kDefault)) << "probe " << i;
  }
  EXPECT_FALSE(law.held(t));
  EXPECT_EQ(law.holds(), 0u);
  law.probed(t += 1s, 400 * kMiB, kDefault);
  law.freed(4 * kMiB);
  back += 4 * kMiB;
  EXPECT_EQ(law.refaulted(t, 500 * kMiB, notActivated(back), kDefault).value_or(0s), 120s)
      << "100 MiB of 100 back: the bottom";
}

// A hot set behind cold cache in the kernel's order (6.12, the cold cache read through a mapping
// after it): each round of probes comes back whole, each page activated and kept from then on.
// The rounds double, so the hot set is read back once in a few rounds and the cold cache goes.
TEST(TrimLaw, ARoundThatCameBackActivatedDoublesTheStep) {
  TrimLaw law;
  TimePoint t{};
  const Rounds r = roundsBack(law, t, 400 * kMiB, 4);
  EXPECT_EQ(r.holds, 0u);
  EXPECT_EQ(r.steps, (std::vector<std::uint64_t>{8, 16, 32, 64})) << "from 4 MiB, up to the reclaim chunk";
  std::uint64_t back = r.back;
  law.freed(64 * kMiB);
  back += 40 * kMiB;
  law.refaulted(t += 1s, 400 * kMiB, activated(back), kDefault);
  EXPECT_EQ(law.step(), 64 * kMiB) << "40 of 64 MiB back: the contact ended within the round, the rest was cold";
  law.freed(64 * kMiB);
  back += 8 * kMiB;
  law.refaulted(t += 1s, 400 * kMiB, activated(back), kDefault);
  EXPECT_EQ(law.step(), 4 * kMiB) << "a refault after the contact: the smallest step again";
}

// After rounds that grew, the round where the contact ended comes back only in part, whether the
// kernel activated those refaults or not (6.12 with the cold cache read through a mapping: in most
// boots none of them): the rest of the round was cold, and the step stays.
TEST(TrimLaw, AfterRoundsThatGrewAPartRoundKeepsTheStepActivatedOrNot) {
  for (const bool activatedBack : {true, false}) {
    TrimLaw law;
    TimePoint t{};
    std::uint64_t back = roundsBack(law, t, 400 * kMiB, 2).back;  // 4 and 8 MiB: the step is 16
    ASSERT_EQ(law.step(), 16 * kMiB);
    law.freed(16 * kMiB);
    back += 6 * kMiB;
    const ReadBack total{back, activatedBack ? back : back - 6 * kMiB};
    EXPECT_FALSE(law.refaulted(t += 1s, 400 * kMiB, total, kDefault));
    EXPECT_EQ(law.lastAnswer(), TrimLaw::StepAnswer::Kept) << activatedBack;
    EXPECT_EQ(law.step(), 16 * kMiB) << "6 of 16 MiB back, activated: " << activatedBack;
  }
}

// Rounds of three probes (the probes come every few seconds, the hot set's reads every tens),
// each whose every byte came back activated: the next probe takes what the whole round took, so
// the contact ends before the kernel marks what came back first as its workingset (6.12: three
// rounds of 6, 18 and 54 MiB instead of four of 6, 12, 24 and 48, and no stall).
TEST(TrimLaw, TheNextProbeTakesWhatAWholeRoundThatCameBackActivatedTook) {
  TrimLaw law;
  TimePoint t{};
  const Rounds r = roundsBack(law, t, 400 * kMiB, 3, 3);
  EXPECT_EQ(r.holds, 0u);
  EXPECT_EQ(r.steps, (std::vector<std::uint64_t>{12, 36, 64})) << "from 4 MiB, each the whole round, up to the chunk";
}

// A round that came back half, after no doubling: a refault as any other.
TEST(TrimLaw, AHalfRoundOutsideTheRoundsIsARefaultAsAnyOther) {
  TrimLaw law;
  TimePoint t{};
  law.start(t, 1000 * kMiB, kDefault);
  for (int i = 0; i < 15; ++i)
    law.probed(t += 6s, 1000 * kMiB, kDefault);
  ASSERT_EQ(law.step(), 64 * kMiB);
  law.refaulted(t, 1000 * kMiB, activated(0), kDefault);
  ASSERT_EQ(law.step(), 4 * kMiB);
  for (int i = 0; i < 10; ++i)
    law.probed(t += 6s, 1000 * kMiB, kDefault);
  ASSERT_EQ(law.step(), 8 * kMiB);
  law.freed(8 * kMiB);
  law.refaulted(t += 6s, 1000 * kMiB, activated(4 * kMiB), kDefault);
  EXPECT_EQ(law.step(), 4 * kMiB);
}

// 7.2 counts a read() refault as a restore, not an activation, and a kernel that has not learned
// gives the next round back too: doubling there read the hot set back twice as fast.
TEST(TrimLaw, RoundsThatCameBackUnactivatedStayAtTheSmallestStep) {
  TrimLaw law;
  TimePoint t{};
  std::uint64_t back = 0;
  law.start(t, 400 * kMiB, kDefault);
  law.refaulted(t += 1s, 400 * kMiB, notActivated(back), kDefault);
  for (int round = 0; round < 4; ++round) {
    law.freed(4 * kMiB);
    back += 4 * kMiB;
    law.refaulted(t += 1s, 400 * kMiB, ReadBack{back, back / 2}, kDefault);
    EXPECT_EQ(law.step(), 4 * kMiB) << "half activated, round " << round;
  }
}

// While rounds double, the first hold waits for half of what lies above the floor: a contact
// that outlasts a quarter still ends in cold cache, and a hold at its end keeps that waiting.
TEST(TrimLaw, WhileRoundsDoubleTheFirstHoldIsJudgedOverHalfOfTheCache) {
  TrimLaw law;
  TimePoint t{};
  std::uint64_t back = 0;
  std::uint64_t freed = 0;
  law.start(t, 400 * kMiB, kDefault);
  law.refaulted(t += 1s, 400 * kMiB, activated(back), kDefault);
  // Rounds of 4, 8, 16, 32, 64 and 64 MiB: 188 MiB, every byte back, past a quarter of 400.
  for (int round = 0; round < 6; ++round) {
    const std::uint64_t step = law.step();
    law.freed(step);
    freed += step;
    back += step;
    EXPECT_FALSE(law.refaulted(t += 1s, 400 * kMiB, activated(back), kDefault)) << freed / kMiB << " MiB";
  }
  ASSERT_EQ(freed, 188 * kMiB);
  law.freed(64 * kMiB);
  back += 64 * kMiB;
  EXPECT_EQ(law.refaulted(t += 1s, 400 * kMiB, activated(back), kDefault).value_or(0s), 120s)
      << "over half of what lies above, every byte back: the bottom";
}

// The work reads its hot set every tens of seconds and the probes come every few: a round's
// refaults can arrive after it was answered. With nothing freed since, they are not a round.
TEST(TrimLaw, LateRefaultsWithNothingFreedSinceAreNoRoundOfTheirOwn) {
  TrimLaw law;
  TimePoint t{};
  std::uint64_t back = roundsBack(law, t, 400 * kMiB, 2).back;  // 4 and 8 MiB
  ASSERT_EQ(law.step(), 16 * kMiB);
  back += 30 * kMiB;
  EXPECT_FALSE(law.refaulted(t += 1s, 400 * kMiB, ReadBack{back, back - 30 * kMiB}, kDefault));
  EXPECT_EQ(law.step(), 16 * kMiB) << "late refaults, unactivated: the step stands";
  law.freed(16 * kMiB);
  back += 16 * kMiB;
  law.refaulted(t += 1s, 400 * kMiB, ReadBack{back, back - 30 * kMiB}, kDefault);
  EXPECT_EQ(law.step(), 32 * kMiB) << "the next round is judged by its own bytes";
}

// The round that ends the doubling is judged as the rounds were sent: over half.
TEST(TrimLaw, TheRoundThatEndsTheDoublingIsJudgedOverHalfOfTheCacheToo) {
  TrimLaw law;
  TimePoint t{};
  const std::uint64_t back = roundsBack(law, t, 400 * kMiB, 4).back;  // 4, 8, 16 and 32 MiB
  ASSERT_EQ(law.step(), 64 * kMiB);
  law.freed(64 * kMiB);
  EXPECT_FALSE(law.refaulted(t += 1s, 400 * kMiB, ReadBack{back + 56 * kMiB, back + 20 * kMiB}, kDefault))
      << "116 of 124 MiB back, past a quarter of 400 but not half";
  EXPECT_EQ(law.step(), 4 * kMiB) << "the last round's refaults mostly not activated";
  law.freed(4 * kMiB);
  EXPECT_FALSE(law.refaulted(t += 1s, 400 * kMiB, ReadBack{back + 72 * kMiB, back + 20 * kMiB}, kDefault))
      << "the round's last refaults after the next probe: still judged over half";
}

TEST(TrimLaw, ARoundsDoublingStopsAtAQuarterOfWhatLiesAbove) {
  TrimLaw law;
  TimePoint t{};
  roundsBack(law, t, 40 * kMiB, 3);
  EXPECT_EQ(law.step(), 10 * kMiB);
}

TEST(TrimLaw, NothingFreedSinceTheLastRefaultIsNoRound) {
  TrimLaw law;
  TimePoint t{};
  law.start(t, 400 * kMiB, kDefault);
  law.refaulted(t += 1s, 400 * kMiB, activated(0), kDefault);
  law.refaulted(t += 1s, 400 * kMiB, activated(8 * kMiB), kDefault);
  EXPECT_EQ(law.step(), 4 * kMiB);
  law.freed(4 * kMiB);
  law.refaulted(t += 1s, 400 * kMiB, ReadBack{4 * kMiB, 4 * kMiB}, kDefault);
  EXPECT_EQ(law.step(), 4 * kMiB) << "counters that went back";
}

}  // namespace
}  // namespace reclaimd::controller

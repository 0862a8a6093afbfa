// The trimming law's holds: only where what the probes free comes back from disk, growing while it
// keeps doing so, and the bottom a hold marks.
#include <gtest/gtest.h>

#include <optional>
#include <vector>

#include "tests/unit/TrimLawRounds.h"

namespace reclaimd::controller {
namespace {

using namespace std::chrono_literals;

// Half of all the probes freed came back, but the last round mostly did not: the contact
// ended within it, and cold cache lies where the probes are now.
TEST(TrimLaw, AContactThatEndedWithinTheLastRoundIsNoBottom) {
  TrimLaw law;
  TimePoint t{};
  std::uint64_t back = 0;
  law.start(t, 400 * kMiB, kDefault);
  law.refaulted(t += 1s, 400 * kMiB, notActivated(back), kDefault);
  for (int round = 0; round < 24; ++round) {  // 96 MiB, every byte back: under a quarter of 400
    law.freed(4 * kMiB);
    back += 4 * kMiB;
    ASSERT_FALSE(law.refaulted(t += 1s, 400 * kMiB, notActivated(back), kDefault)) << round;
  }
  law.freed(4 * kMiB);
  back += 1 * kMiB;
  EXPECT_FALSE(law.refaulted(t += 1s, 400 * kMiB, notActivated(back), kDefault))
      << "97 of 100 MiB back, but 1 of the last 4";
  EXPECT_FALSE(law.held(t));
}

TEST(TrimLaw, HalfOfWhatWasFreedComingBackHoldsAndTheHoldsGrowWhileItDoes) {
  TrimLaw law;
  TimePoint t{};
  std::uint64_t back = 0;
  law.start(t, 300 * kMiB, kDefault);
  ASSERT_FALSE(law.refaulted(t += 6s, 300 * kMiB, notActivated(back), kDefault));
  std::vector<std::chrono::nanoseconds> holds;
  for (int i = 0; i < 7; ++i) {
    // A quarter of what lies above the floor for the first, four smallest probes after: all read back.
    const int probes = i == 0 ? 19 : 4;
    for (int p = 0; p < probes; ++p)
      law.freed(4 * kMiB);
    back += probes * 4 * kMiB;
    const auto hold = law.refaulted(t += 3s, 300 * kMiB, notActivated(back), kDefault);
    ASSERT_TRUE(hold.has_value()) << i;
    EXPECT_TRUE(law.held(t + *hold - 1s));
    EXPECT_FALSE(law.held(t + *hold));
    EXPECT_EQ(law.heldLevel(), 300 * kMiB);
    holds.push_back(*hold);
    t = law.heldUntil();
    law.start(t, 300 * kMiB, kDefault);
  }
  const std::vector<std::chrono::nanoseconds> want{120s, 240s, 480s, 960s, 1800s, 1800s, 1800s};
  EXPECT_EQ(holds, want);
}

TEST(TrimLaw, AHoldMarksTheBottomForHalfAnHourFromIt) {
  TrimLaw law;
  TimePoint t{};
  EXPECT_EQ(law.bottom(t, 0), 0u) << "no hold yet: the floor is the bottom";
  ASSERT_TRUE(heldAt(law, t, 352 * kMiB));
  EXPECT_EQ(law.bottom(law.heldUntil(), 76 * kMiB), 352 * kMiB) << "past the hold, probes stay above it";
  EXPECT_EQ(law.bottom(t + 30min - 1s, 76 * kMiB), 352 * kMiB);
  EXPECT_EQ(law.bottom(t + 30min, 76 * kMiB), 0u) << "then the bottom is tested again";
}

// A first hold with more than half of what lay above the floor still there may be a first
// contact: it holds, but marks no bottom. The second in the row does.
TEST(TrimLaw, AFirstHoldHighUpMarksNoBottom) {
  TrimLaw law;
  TimePoint t{};
  law.start(t, 300 * kMiB, kDefault);
  law.refaulted(t += 6s, 428 * kMiB, notActivated(0), kDefault);
  law.freed(76 * kMiB);
  law.probed(t += 6s, 224 * kMiB, kDefault);
  ASSERT_TRUE(law.refaulted(t += 6s, 352 * kMiB, notActivated(76 * kMiB), kDefault));
  EXPECT_EQ(law.bottom(law.heldUntil(), 76 * kMiB), 0u) << "224 of 300 MiB still above the floor";
  t = law.heldUntil();
  law.start(t, 224 * kMiB, kDefault);
  law.freed(16 * kMiB);
  law.probed(t += 6s, 208 * kMiB, kDefault);
  ASSERT_TRUE(law.refaulted(t += 6s, 336 * kMiB, notActivated(92 * kMiB), kDefault));
  EXPECT_EQ(law.bottom(law.heldUntil(), 92 * kMiB), 336 * kMiB) << "met again: the bottom";
}

// Probing began before the work filled the cache (the background alone, under its floor): high
// up is judged against the most that lay above since, not the nothing there was at the start. The
// work left 372 MiB above; a round took 298 of it and the hot set came back, the probes after it
// took the hot set again: held with 132 MiB above, under half, the bottom.
TEST(TrimLaw, HighUpIsJudgedAgainstTheCacheTheWorkFilled) {
  TrimLaw law;
  TimePoint t{};
  law.start(t, 0, kDefault);
  law.paused();  // heavy work
  law.probed(t += 90s, 372 * kMiB, kDefault);
  law.freed(298 * kMiB);
  law.probed(t += 6s, 74 * kMiB, kDefault);
  ASSERT_FALSE(law.refaulted(t += 6s, 300 * kMiB, notActivated(97 * kMiB), kDefault));
  for (int i = 0; i < 11; ++i) {
    law.freed(4 * kMiB);
    law.probed(t += 1s, 172 * kMiB - i * 4 * kMiB, kDefault);
  }
  ASSERT_TRUE(law.refaulted(t += 6s, 292 * kMiB, notActivated(141 * kMiB), kDefault));
  EXPECT_EQ(law.bottom(law.heldUntil(), 141 * kMiB), 292 * kMiB) << "132 of 372 MiB above: the bottom";
}

// The hold was judged before the work had read back all that the probes took (a hot set read
// once a minute): what its next read brings back from disk is the work's too.
TEST(TrimLaw, WhatComesBackAfterAHoldRaisesTheBottom) {
  TrimLaw law;
  TimePoint t{};
  ASSERT_TRUE(heldAt(law, t, 131 * kMiB));
  EXPECT_EQ(law.bottom(t, 76 * kMiB), 131 * kMiB);
  EXPECT_EQ(law.bottom(t + 1min, (76 + 97) * kMiB), 228 * kMiB) << "the next read brought 97 MiB back";
  EXPECT_EQ(law.bottom(t + 1min, 10 * kMiB), 131 * kMiB) << "a counter that went back says nothing";
  EXPECT_EQ(law.heldLevel(), 131 * kMiB) << "the level the hold held at stays what it was";
}

// Only what comes back while the hold lasts: later refaults are new reads of old files (the work
// run again reads back the cache the probes took), and a bottom raised by them would keep the new
// run's cache for the rest of the half hour.
TEST(TrimLaw, WhatComesBackAfterTheHoldEndedLeavesTheBottom) {
  TrimLaw law;
  TimePoint t{};
  ASSERT_TRUE(heldAt(law, t, 131 * kMiB));
  law.observe(t + 1min, (76 + 97) * kMiB);  // the hot set's next read, within the hold
  const TimePoint after = law.heldUntil() + 10min;
  law.observe(after, (76 + 97 + 259) * kMiB);  // not held: nothing changes
  EXPECT_EQ(law.bottom(after, (76 + 97 + 259) * kMiB), 228 * kMiB) << "the second run's 259 MiB are above it";
  EXPECT_EQ(law.bottom(t + 1min, (76 + 97) * kMiB), 228 * kMiB) << "within the hold, as it comes";
  EXPECT_EQ(law.bottom(after, 10 * kMiB), 131 * kMiB) << "a counter that went back says nothing";
}

// The work run again within the hold (an edit and a rebuild): it reads back the files the probes
// took, and the kernel counts them as refaults. From the heavy work on they raise the bottom no
// more; the round that ends with them is no round of the probes', and judging starts afresh: the
// new run's first contact high up is no bottom.
TEST(TrimLaw, WorkRunAgainStartsARowOfItsOwn) {
  TrimLaw law;
  TimePoint t{};
  ASSERT_TRUE(heldAt(law, t, 131 * kMiB));
  law.observe(t += 10s, 90 * kMiB);  // the hot set's next read, within the hold
  law.heavyWork(t += 1s);
  law.observe(t += 5s, (90 + 259) * kMiB);  // the second run's reads
  EXPECT_EQ(law.bottom(t, (90 + 259) * kMiB), 145 * kMiB) << "only what came back before the work";
  t = law.heldUntil();
  // As on 7.2: the probes after the second run meet the hot set first, a fifth of a round back, then
  // every byte of four smallest probes.
  law.start(t, 0, kDefault);  // at the bottom
  law.probed(t += 1s, 373 * kMiB, kDefault);
  law.freed(17 * kMiB);
  EXPECT_FALSE(law.refaulted(t += 5s, 484 * kMiB, notActivated(352 * kMiB), kDefault));
  EXPECT_EQ(law.lastAnswer(), TrimLaw::StepAnswer::NewWork) << "259 MiB back of 17 taken";
  EXPECT_EQ(law.holds(), 0u);
  law.freed(4 * kMiB);
  EXPECT_FALSE(law.refaulted(t += 5s, 484 * kMiB, notActivated(356 * kMiB), kDefault));
  for (int i = 0; i < 3; ++i) {
    law.freed(4 * kMiB);
    EXPECT_FALSE(law.refaulted(t += 5s, 484 * kMiB, notActivated((360 + 4 * i) * kMiB), kDefault))
        << "judged as a first hold: a quarter of what lies above must be freed first";
  }
  EXPECT_FALSE(law.held(t));
  EXPECT_EQ(law.bottom(t, 372 * kMiB), 145 * kMiB);
}

// Heavy work since the last round was judged. More back than the probes took since they last had
// nothing to take (and four smallest steps for the round before's late refaults) is the work run
// again, reading back the files the probes took before: no round of the probes', and judging
// starts afresh. As much as they took is a read that brought it back, heavy for a moment, and
// judged as any; and without heavy work, refaults are judged as any.
TEST(TrimLaw, MoreBackThanTheProbesTookWhileHeavyWorkRanIsTheWorkRunAgain) {
  for (const bool heavy : {false, true}) {
    for (const std::uint64_t came : {12 * kMiB, 380 * kMiB}) {
      TrimLaw law;
      TimePoint t{};
      law.start(t, 400 * kMiB, kDefault);
      law.refaulted(t += 1s, 528 * kMiB, notActivated(0), kDefault);
      law.freed(380 * kMiB);  // the first run's cache, to the floor without a refault
      law.probed(t += 1min, 0, kDefault);  // at the floor
      law.probed(t += 9min, 30 * kMiB, kDefault);
      law.freed(4 * kMiB);  // as the second run starts
      if (heavy) law.heavyWork(t += 1s);
      const bool held = law.refaulted(t += 5s, 528 * kMiB, notActivated(came), kDefault).has_value();
      const bool rerun = heavy && came > 12 * kMiB;
      EXPECT_EQ(held, !rerun) << heavy << " " << came / kMiB;
      EXPECT_EQ(law.lastAnswer() == TrimLaw::StepAnswer::NewWork, rerun) << heavy << " " << came / kMiB;
    }
  }
}

TEST(TrimLaw, ACleanStretchEndsTheEscalation) {
  TrimLaw law;
  TimePoint t{};
  ASSERT_TRUE(heldAt(law, t, 300 * kMiB));
  t = law.heldUntil();
  law.start(t, 300 * kMiB, kDefault);
  for (int i = 0; i < 12; ++i)
    law.probed(t += 6s, 300 * kMiB, kDefault);
  EXPECT_EQ(law.holds(), 0u);
  law.freed(16 * kMiB);
  EXPECT_FALSE(law.refaulted(t += 6s, 300 * kMiB, notActivated(92 * kMiB), kDefault))
      << "a first hold again: a quarter to judge";
  law.freed(60 * kMiB);
  EXPECT_EQ(law.refaulted(t += 6s, 300 * kMiB, notActivated(152 * kMiB), kDefault).value_or(0s), 120s)
      << "the escalation starts over";
}

TEST(TrimLaw, ACounterThatWentBackIsNoHistory) {
  TrimLaw law;
  law.start(TimePoint{}, 300 * kMiB, kDefault);
  law.refaulted(TimePoint{} + 6s, 300 * kMiB, notActivated(100 * kMiB), kDefault);
  law.freed(80 * kMiB);
  EXPECT_FALSE(law.refaulted(TimePoint{} + 12s, 300 * kMiB, notActivated(20 * kMiB), kDefault));
}

// After a first refault, probes ran through `freed` bytes and `came` of them came back: the
// hold, if that round's refault starts one.
std::optional<std::chrono::nanoseconds> afterARun(std::uint64_t freed, std::uint64_t came) {
  TrimLaw law;
  law.start(TimePoint{}, 400 * kMiB, kDefault);
  law.refaulted(TimePoint{} + 1s, 400 * kMiB, notActivated(0), kDefault);
  law.freed(freed);
  return law.refaulted(TimePoint{} + 2s, 60 * kMiB, notActivated(came), kDefault);
}

// A round that ran through cold cache (half of what lay above the floor when it began, under an
// eighth of it back) met the work's cache at its end: the bottom, held at once.
TEST(TrimLaw, ARefaultAfterARunThroughColdCacheHoldsAtOnce) {
  EXPECT_EQ(afterARun(300 * kMiB, 3 * kMiB), std::chrono::nanoseconds(120s));
  EXPECT_EQ(afterARun(200 * kMiB, 24 * kMiB), std::chrono::nanoseconds(120s));
  EXPECT_FALSE(afterARun(190 * kMiB, 3 * kMiB)) << "under half of the 400 MiB above: a contact on the way";
  EXPECT_FALSE(afterARun(200 * kMiB, 25 * kMiB)) << "an eighth back: still a contact";
  EXPECT_FALSE(afterARun(300 * kMiB, 0)) << "nothing came back";
}

// Rounds that came back activated grew: the kernel is giving up a hot set that lies among the
// cold cache, and a few of its pages met at the end of a long round are no bottom. Where the
// rounds stayed at the smallest step, the same run holds.
TEST(TrimLaw, ARunThroughColdCacheAfterRoundsThatGrewIsNoBottom) {
  for (const bool grew : {true, false}) {
    TrimLaw law;
    TimePoint t{};
    const std::uint64_t back = roundsBack(law, t, 400 * kMiB, 2, 1, grew).back;
    ASSERT_EQ(law.step(), grew ? 16 * kMiB : 4 * kMiB);
    law.freed(220 * kMiB);
    const ReadBack total = grew ? activated(back + 15 * kMiB) : notActivated(back + 15 * kMiB);
    const bool held = law.refaulted(t += 1s, 180 * kMiB, total, kDefault).has_value();
    EXPECT_EQ(held, !grew) << (grew ? "rounds grew" : "rounds at the smallest step");
    EXPECT_EQ(law.step(), grew ? 16 * kMiB : 4 * kMiB) << "after rounds that grew the step is kept";
  }
}

// Probes aimed at a quiet cgroup took its cache to its floor and come back to the whole, 22 MiB
// over the floor: the first round that brings anything back is the bottom (the busy cgroups'
// cache), held and marked, where judged as usual a third back of each round would not hold.
TEST(TrimLaw, AfterAnAimDrainedTheFirstRoundBackMarksTheBottom) {
  for (const bool drained : {true, false}) {
    TrimLaw law;
    TimePoint t{};
    law.start(t, 500 * kMiB, kDefault);
    law.freed(370 * kMiB);  // the aimed probes: nothing came back
    if (drained)
      law.aimDrained(t += 6s, 22 * kMiB, kDefault);
    else
      law.start(t += 6s, 22 * kMiB, kDefault);
    EXPECT_EQ(law.step(), 4 * kMiB) << "from the first step";
    // The first refault of a law's life gives the count to judge by; the round after it is judged.
    EXPECT_FALSE(law.refaulted(t += 6s, 145 * kMiB, activated(2 * kMiB), kDefault));
    law.freed(8 * kMiB);
    const auto hold = law.refaulted(t += 6s, 142 * kMiB, activated(5 * kMiB), kDefault);
    EXPECT_EQ(hold.has_value(), drained) << (drained ? "drained" : "started afresh");
    if (!drained) continue;
    EXPECT_EQ(law.bottom(t, 5 * kMiB), 142 * kMiB) << "a bottom, not a first contact high up";
    law.freed(4 * kMiB);
    EXPECT_FALSE(law.refaulted(t += 200s, 140 * kMiB, activated(6 * kMiB), kDefault))
        << "only the first round after it is judged so: a quarter back of the next holds no more";
  }
}

// Probes aimed at a quiet cgroup double every probe, without the clean stretch; a refault puts
// the step back to the smallest and growth goes on at the next probe; back to the whole, the
// stretch again.
TEST(TrimLaw, AimedProbesDoubleWithoutWaitingForACleanStretch) {
  for (const bool aimed : {true, false}) {
    TrimLaw law;
    TimePoint t{};
    law.start(t, 400 * kMiB, kDefault);
    if (aimed) law.aimed();
    std::vector<std::uint64_t> steps;
    for (int i = 0; i < 4; ++i) {
      law.probed(t += 6s, 400 * kMiB, kDefault);
      steps.push_back(law.step() / kMiB);
    }
    const std::vector<std::uint64_t> expected =
        aimed ? std::vector<std::uint64_t>{8, 16, 32, 64} : std::vector<std::uint64_t>{4, 4, 4, 4};
    EXPECT_EQ(steps, expected) << (aimed ? "aimed" : "the whole");
    if (!aimed) continue;
    law.refaulted(t += 1s, 300 * kMiB, notActivated(0), kDefault);  // the count to judge by
    law.freed(64 * kMiB);
    EXPECT_FALSE(law.refaulted(t += 1s, 300 * kMiB, notActivated(4 * kMiB), kDefault));
    EXPECT_EQ(law.step(), 4 * kMiB) << "a refault: the smallest step";
    law.probed(t += 6s, 300 * kMiB, kDefault);
    EXPECT_EQ(law.step(), 8 * kMiB) << "and growth goes on";
    law.start(t, 300 * kMiB, kDefault);  // the aim ended
    law.probed(t += 6s, 300 * kMiB, kDefault);
    EXPECT_EQ(law.step(), 4 * kMiB) << "the whole waits for a clean stretch";
  }
}

TEST(TrimLaw, HugeFiguresSaturate) {
  TrimLaw law;
  const std::uint64_t huge = ~std::uint64_t{0};
  const TrimLawSettings s{4 * kMiB, 100, huge, 2s};
  law.start(TimePoint{}, huge, s);
  for (int i = 0; i < 70; ++i)
    law.probed(TimePoint{} + std::chrono::seconds(2 + i), huge, s);
  EXPECT_EQ(law.step(), huge / 4);
  EXPECT_EQ(law.size(huge, s), huge / 4);
  law.refaulted(TimePoint{} + 80s, huge, notActivated(0), s);
  law.freed(huge);
  law.freed(huge);
  EXPECT_FALSE(law.refaulted(TimePoint{} + 81s, huge, notActivated(0), s)) << "nothing came back";
}

}  // namespace
}  // namespace reclaimd::controller

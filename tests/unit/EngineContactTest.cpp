// Trimming meets the work's hot set: holds only where what the probes free comes back, the bottom
// a hold marks, and a kernel's first contact with a hot set it gives up before its cold cache.
#include <gtest/gtest.h>

#include "tests/unit/EngineHarness.h"

namespace reclaimd::testing {
namespace {

using namespace std::chrono_literals;

class EngineContactTest : public EngineHarness {
 protected:
  // The never-idle work runs in `work`, where its cache is: it is not quiet by its own CPU.
  EngineContactTest() { sim_.chargeMachineTo("work"); }
  // 600 MiB in `work`, whose 100 MiB hot set the kernel gives up before its cold cache: every
  // byte of it a probe takes is read back once, counted as activations where `activates`.
  void hotSetGivenUpFirst(bool activates) {
    sim_.addCgroup("work", 600 * kMiB);
    sim_.cgroup("work").hot = 100 * kMiB;
    sim_.cgroup("work").unlearned = 100 * kMiB;
    sim_.cgroup("work").activates = activates;
    sim_.setMachineBusy(0.04);
    start();
  }
  // That machine: how long after the first probe its cache is within 10 % of the hot set of
  // its 128 MiB floor, which holds the hot set (or 20 minutes).
  std::chrono::nanoseconds firstContact(bool activates) {
    hotSetGivenUpFirst(activates);
    EXPECT_TRUE(runUntil([&] { return !sim_.writes().empty(); }, 3min));
    const TimePoint first = clock_.now();
    runUntil([&] { return sim_.subtreeFile("") <= 138 * kMiB; }, 20min);
    return clock_.now() - first;
  }
  // A hot set the work reads every `period`, and the kernel gives up before the rest of the
  // floor's cache (7.2: a file read with read() lies in older generations than the mapped files
  // every process touches): what a probe takes of it comes back only at the next read, long after
  // the probe. Returns MiB read back in the 20 minutes after the probes first reach it: 239 MiB
  // (60 s) and 99 MiB (20 s) while only refaults within 10 s of a probe counted.
  // `takes`: how long each read takes to bring back from disk what the probes took.
  // `first`: of the hot set, what the kernel gives up before the cold cache (a first contact).
  double readBackAfterContact(std::chrono::seconds period, std::chrono::seconds takes = 0s, std::uint64_t first = 0) {
    sim_.addCgroup("work", 600 * kMiB);
    sim_.cgroup("work").hot = 140 * kMiB;  // the floor's 128 MiB are all of it
    sim_.cgroup("work").unlearned = first;
    sim_.cgroup("work").rereadEvery = period;
    sim_.cgroup("work").readTakes = takes;
    sim_.cgroup("work").activates = false;
    sim_.setMachineBusy(0.04);
    start();
    EXPECT_TRUE(runUntil([&] { return sim_.subtreeFile("") < 140 * kMiB; }, 20min)) << "the probes reach it";
    const std::uint64_t contact = sim_.cgroup("work").refaults;
    run(20min);
    EXPECT_LE(static_cast<double>(sim_.subtreeFile("")) / kMiB, 154) << "the cold cache stays gone";
    return static_cast<double>(sim_.cgroup("work").refaults - contact) * 4096 / kMiB;
  }
  // 600 MiB in `work`, of which `hot` is read again and again, on a machine that never goes idle:
  // whether the probes reach the hot set and hold within 20 minutes.
  bool heldOnHotSet(std::uint64_t hot) {
    sim_.addCgroup("work", 600 * kMiB);
    sim_.cgroup("work").hot = hot;
    sim_.setMachineBusy(0.04);
    start();
    return runUntil([&] { return status().trimHolds > 0; }, 20min);
  }
  // The work runs again `after` the hold began, on 600 MiB with a 300 MiB hot set: it reads back
  // the 250 MiB of files the probes took, counted as refaults. Whether the probes took the new
  // run's cache back to the bottom within 10 minutes, with nothing of the hot set read back.
  bool trimmedAfterTheWorkRanAgain(std::chrono::seconds after) {
    if (!heldOnHotSet(300 * kMiB)) return false;
    run(after);
    SimCgroup& work = sim_.cgroup("work");
    sim_.setMachineBusy(0.5);
    run(1min);
    work.file += 250 * kMiB;  // read back from disk: refaults
    work.refaults += 250 * kMiB / 4096;
    sim_.setMachineBusy(0.04);
    const std::uint64_t refaults = work.refaults;
    const bool trimmed = runUntil([&] { return work.file <= 310 * kMiB; }, 10min);
    EXPECT_EQ(work.refaults, refaults) << "MiB read back: " << (work.refaults - refaults) * 4096 / kMiB;
    return trimmed;
  }
  // The work runs again, `readsAfter` its start, on a machine whose probes took its first run's
  // cache to the floor without more than a first refault, and just after a probe. Whether the new
  // cache went back to the floor within 10 minutes, with no hold on the way.
  bool trimmedAfterTheWorkRanAgainJustAfterAProbe(std::chrono::seconds readsAfter) {
    sim_.addCgroup("work", 600 * kMiB);
    sim_.setMachineBusy(0.04);
    start();
    SimCgroup& work = sim_.cgroup("work");
    if (!runUntil([&] { return !sim_.writes().empty(); }, 5min)) return false;
    work.refaults += 5 * kMiB / 4096;  // the first run's last reads: the counter to judge by
    if (!runUntil([&] { return sim_.subtreeFile("") <= 138 * kMiB; }, 20min)) return false;
    run(5min);  // at the floor
    EXPECT_EQ(named("trim_refaulted").size(), 1u);
    work.file += 30 * kMiB;  // the work's first reads
    const std::size_t writes = sim_.writes().size();
    if (!runUntil([&] { return sim_.writes().size() > writes; }, 1min)) return false;
    sim_.setMachineBusy(1);
    run(readsAfter);
    for (int i = 0; i < 80; ++i) {  // the rest, read back from disk as it runs
      work.file += 5 * kMiB;
      work.refaults += 5 * kMiB / 4096;
      run(250ms);
    }
    run(1min);
    sim_.setMachineBusy(0.04);
    const bool trimmed = runUntil([&] { return sim_.subtreeFile("") <= 138 * kMiB; }, 10min);
    EXPECT_TRUE(named("trim_held").empty());
    const auto refaulted = named("trim_refaulted");
    const std::string why = refaulted.empty() ? "" : *refaulted.back().field("reason");
    EXPECT_NE(why.find("the work ran again"), std::string::npos) << why;
    return trimmed;
  }
};

// What every probe frees comes back: what is left is the work's. Probing holds for a grace,
// and for 30 minutes from the hold no probe goes below that level; then the bottom is tested
// again, with four smallest probes.
TEST_F(EngineContactTest, WhatProbesFreeComingBackHoldsAndMarksTheBottomForHalfAnHour) {
  ASSERT_TRUE(heldOnHotSet(300 * kMiB)) << "the probes reach the hot set";
  EXPECT_NEAR(mib(*named("trim_held")[0].field("held_mib")), 300, 8) << "held where the work's reads showed";
  EXPECT_NE(named("trim_held")[0].field("reason")->find("none below this level for 30 minutes"), std::string::npos);
  const std::size_t writes = sim_.writes().size();
  const std::uint64_t refaults = sim_.cgroup("work").refaults;
  run(29min);
  EXPECT_EQ(sim_.writes().size(), writes) << "nothing above the bottom, nothing below it";
  EXPECT_EQ(sim_.cgroup("work").refaults, refaults);
  EXPECT_EQ(status().targets.at(0).trim, "probing");
  const std::string why = status().targets.at(0).trimWhy;
  EXPECT_NE(why.find("probes take only what lies above 30"), std::string::npos) << why;
  ASSERT_TRUE(runUntil([&] { return status().trimHolds > 1; }, 5min)) << "the bottom tested again";
  EXPECT_GT(sim_.writes().size(), writes);
  EXPECT_LE(sim_.cgroup("work").refaults - refaults, 4u * 1024 + 1024) << "four smallest probes read back";
  EXPECT_EQ(backoffs(), 0u);
}

// Most of the cache is the work's: the first hold comes high above the floor, where a first
// contact could hold too. It marks no bottom; the probes test below it after the hold, meet the
// work's cache again, and the second hold marks it.
TEST_F(EngineContactTest, AFirstHoldHighUpIsTestedAgainAfterItsGrace) {
  ASSERT_TRUE(heldOnHotSet(450 * kMiB));
  const std::string reason = *named("trim_held")[0].field("reason");
  EXPECT_NE(reason.find("may be a first contact"), std::string::npos) << reason;
  ASSERT_TRUE(runUntil([&] { return status().trimHolds > 1; }, 10min)) << "tested again after its grace";
  EXPECT_NE(named("trim_held")[1].field("reason")->find("30 minutes"), std::string::npos);
  EXPECT_NEAR(mib(*named("trim_held")[1].field("held_mib")), 450, 8);
}

// The hold came before the work read back all the probes took (a hot set read once a minute, a
// read that pauses): 60 MiB more come back from disk after it. They are
// the work's too: no probe takes them while the bottom holds, where they were taken and read
// back again at every read.
TEST_F(EngineContactTest, WhatComesBackAfterAHoldIsPartOfTheBottom) {
  ASSERT_TRUE(heldOnHotSet(300 * kMiB)) << "the probes reach the hot set";
  SimCgroup& work = sim_.cgroup("work");
  work.file += 60 * kMiB;  // the rest of the read, after the hold
  work.refaults += 60 * kMiB / 4096;
  work.hot += 60 * kMiB;
  const std::uint64_t refaults = work.refaults;
  run(20min);
  EXPECT_EQ(work.refaults, refaults) << "MiB read back: " << (work.refaults - refaults) * 4096 / kMiB;
  EXPECT_EQ(status().trimHolds, 1u);
  const std::string why = status().targets.at(0).trimWhy;
  EXPECT_NE(why.find("probes take only what lies above 36"), std::string::npos) << why;
}

// The work runs again (an edit, a rebuild) `after` the hold began: it reads back the 250 MiB of
// files the probes took, and the kernel counts those as refaults. They are no part of the bottom
// (what came back before the work): the probes take the new run's cache down to it again, without
// the hot set below. Whether the cache was back there within 10 minutes.
TEST_F(EngineContactTest, TheWorkRunAgainAfterAHoldIsTrimmedToTheBottom) {
  EXPECT_TRUE(trimmedAfterTheWorkRanAgain(10min)) << "after the hold";
}

TEST_F(EngineContactTest, TheWorkRunAgainWithinAHoldIsTrimmedToTheBottom) {
  EXPECT_TRUE(trimmedAfterTheWorkRanAgain(30s)) << "within the hold";
}

// The work runs again on a machine the probes took to its floor, and a probe goes out as it
// starts (its first interval is not yet heavy work): the 400 MiB of files it reads back over 20 s
// jump the refaults after that probe. They are the work's reads, not the probe's round: no hold,
// and the new cache goes as the first did. Whether the heavy work is seen before the jump or
// while its refaults come in.
TEST_F(EngineContactTest, TheWorkRunAgainJustAfterAProbeIsNoHold) {
  EXPECT_TRUE(trimmedAfterTheWorkRanAgainJustAfterAProbe(0s)) << "heavy work seen as its refaults come in";
}

TEST_F(EngineContactTest, TheWorkRunAgainJustAfterAProbeIsNoHoldWhereItsReadsComeLater) {
  EXPECT_TRUE(trimmedAfterTheWorkRanAgainJustAfterAProbe(8s)) << "heavy work seen before the jump";
}

// A hot set behind the cold cache in the kernel's order (6.12, the cold cache read through a
// mapping after it): the probes' bytes all come back, activated, until the whole hot set was read
// back once. The rounds grow through it (a probe a round here: they double), and no hold follows
// a contact that ended.
TEST_F(EngineContactTest, AHotSetGivenUpFirstAndActivatedIsPassedInRoundsThatGrow) {
  const auto took = firstContact(true);
  EXPECT_LE(took, 150s) << "cold cache gone within minutes of the first probe";
  EXPECT_EQ(status().trimHolds, 0u);
  EXPECT_NEAR(sim_.cgroup("work").refaults, 100 * kMiB / 4096, 2) << "the hot set read back once";
  const auto w = sim_.writes();
  ASSERT_GE(w.size(), 5u);
  EXPECT_EQ(w[4].bytes, 16 * kMiB) << "2.4 MiB back, then 2, 4, 8 and 16";
  const auto refaulted = named("trim_refaulted");
  ASSERT_GE(refaulted.size(), 3u);
  EXPECT_NE(refaulted[2].field("reason").value_or("").find("the next probe takes as much as the whole round did"),
            std::string::npos);
  EXPECT_EQ(refaulted[2].field("came_back_mib"), "4.0");
  EXPECT_EQ(refaulted[2].field("activated_mib"), "4.0");
}

TEST_F(EngineContactTest, StatusSaysTheProbesStayLargeWhileTheKernelKeepsWhatCameBack) {
  hotSetGivenUpFirst(true);
  ASSERT_TRUE(runUntil([&] { return count("trim_refaulted") >= 3; }, 5min));
  const std::string why = status().targets.at(0).trimWhy;
  EXPECT_NE(why.find("the kernel activated (it keeps it now): the probes stay large"), std::string::npos) << why;
}

// The round where that contact ends comes back only in part: the rest of it was cold, and the
// probes keep their size; the event and the status say so.
TEST_F(EngineContactTest, AContactThatEndsWithinARoundKeepsTheProbesSize) {
  hotSetGivenUpFirst(true);
  const auto kept = [&] {
    const auto refaulted = named("trim_refaulted");
    return !refaulted.empty() &&
           refaulted.back().field("reason").value_or("").find("the next probe keeps its size") != std::string::npos;
  };
  ASSERT_TRUE(runUntil(kept, 5min));
  const std::string why = status().targets.at(0).trimWhy;
  EXPECT_NE(why.find("within their last round and the rest was cold: they keep their size"), std::string::npos) << why;
}

// The same contact on a kernel that counts those refaults as restores, not activations (7.2):
// nothing says the kernel keeps what came back, so the probes stay at the smallest step.
TEST_F(EngineContactTest, AHotSetGivenUpFirstUnactivatedIsPassedInTheSmallestSteps) {
  const auto took = firstContact(false);
  EXPECT_GE(took, 4min) << "4 MiB an interval through the contact, then a clean stretch";
  EXPECT_NEAR(sim_.cgroup("work").refaults, 100 * kMiB / 4096, 2);
  EXPECT_EQ(sim_.cgroup("work").activations, 0u);
  for (const Write& x : sim_.writes()) {
    if (x.at - sim_.writes().front().at > 2min) break;
    EXPECT_LE(x.bytes, 5 * kMiB) << "no round doubled";
  }
}

// Refaults that come a read period after the probe are the probes' too: once what came back
// shows the bottom, the hot set is not taken again at every read of it (12 MiB each time). The
// first contact costs what the probes took read back three times: the first refault of a row
// starts the count, and a hold needs four smallest probes' worth freed.
TEST_F(EngineContactTest, AHotSetReadEveryMinuteIsNotTakenAgainAtEveryRead) {
  EXPECT_LE(readBackAfterContact(60s), 40) << "MiB";
  EXPECT_EQ(status().trimHolds, 1u) << "the bottom holds for 30 minutes";
}

TEST_F(EngineContactTest, AHotSetReadEveryTwentySecondsIsNotTakenAgainAtEveryRead) {
  EXPECT_LE(readBackAfterContact(20s), 40) << "MiB";
  EXPECT_EQ(status().trimHolds, 1u);
}

// A read that takes seconds to bring back what the probes took (a VM's disk, tens of MiB a
// second) is seen over several readings: its refaults are one round, judged once they are in,
// not its first megabytes.
TEST_F(EngineContactTest, AHotSetReadBackOverTwoSecondsIsJudgedWhenItIsIn) {
  EXPECT_LE(readBackAfterContact(60s, 2s), 40) << "MiB";
  EXPECT_EQ(status().trimHolds, 1u);
}

TEST_F(EngineContactTest, AHotSetReadBackOverEightSecondsIsJudgedWhenItIsIn) {
  EXPECT_LE(readBackAfterContact(60s, 8s), 40) << "MiB";
  EXPECT_EQ(status().trimHolds, 1u);
}

TEST_F(EngineContactTest, AHotSetReadEveryTwentySecondsBackOverFourIsJudgedWhenItIsIn) {
  EXPECT_LE(readBackAfterContact(20s, 4s), 40) << "MiB";
  EXPECT_EQ(status().trimHolds, 1u);
}

// The probes met the hot set first (7.2: read before the cold cache, 20 MiB of it given up), then
// ran through the cold cache: what they meet at its end is the work's. They hold there at once,
// not after what they take until the work's next read came back too.
TEST_F(EngineContactTest, AHotSetMetAfterARunThroughColdCacheHoldsAtOnce) {
  EXPECT_LE(readBackAfterContact(60s, 2s, 20 * kMiB), 16) << "MiB";
  EXPECT_EQ(status().trimHolds, 1u);
}

// A hold ends: probing starts again from a fresh refault rate, and cold cache read meanwhile
// goes.
TEST_F(EngineContactTest, CacheReadDuringAHoldIsTrimmedAfterIt) {
  ASSERT_TRUE(heldOnHotSet(300 * kMiB));
  EXPECT_EQ(status().targets.at(0).trim, "held");
  const std::size_t writes = sim_.writes().size();
  sim_.cgroup("work").file += 200 * kMiB;
  run(110s);
  EXPECT_EQ(sim_.writes().size(), writes) << "no probe while held";
  ASSERT_TRUE(runUntil([&] { return status().targets.at(0).trim == "probing"; }, 1min)) << "the hold ends";
  run(5min);
  EXPECT_GT(sim_.writes().size(), writes);
  EXPECT_LE(static_cast<double>(sim_.subtreeFile("")) / kMiB, 300 + 10);
}

}  // namespace
}  // namespace reclaimd::testing

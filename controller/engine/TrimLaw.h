// How big a busy target's next probe is, and when refaults stop probing: the trimming law.
//
// A probe is a small memory.reclaim write; the kernel takes what it thinks coldest first. Refaults
// after a probe (cache the work reads coming back from disk) say that this probe touched cache in
// use, not that nothing cold is left: an LRU that has not yet seen the work's hot set read back
// (classic LRU's workingset activation, MGLRU's tiers) gives some of it up at a first contact,
// learns from the refault, and keeps it from then on. A hot set read before the work's cache is
// older than it and is what probes meet first. The rules, each measured over the never-idle matrix
// on 6.1, 6.12 and 7.2 (docs/design.md, Trimming, has the figures behind each):
//
// 1. Growth. Probes start small (trim.percent of what lies above the floor, at least the smallest
//    step). A clean stretch (half the grace, so longer than the work's re-reads that matter) with
//    no refault doubles the step every probe, up to a quarter of what lies above the floor and the
//    reclaim chunk. The stretch is the probes' own time: it starts again where no probe could be
//    sent (at the floor or the bottom, or waiting out heavy work), since probes that doubled at
//    once after the work met 6.1's hot set and stalled the workload. At the floor the step starts
//    again too: what lies above later is new cache. Not after heavy work alone: the read that
//    brings back a round can be heavy work. Probes aimed at a quiet cgroup double from the first
//    (aimed()): it has no reader of its own for the kernel to learn from.
// 2. A refault ends a round (the probes since the last refault) and sets the step:
//    - a trickle, at the smallest step a round of four smallest probes or more with under an eighth
//      back: the step and the stretch go on (the probes take cold cache and met the edge of the
//      work's);
//    - before the first hold, a round that came back (three quarters or more) as activated
//      refaults: the next probe is as large as the round, at least twice the step. The kernel is
//      giving up, once, a hot set that lies behind cold cache and keeps each page read back; larger
//      rounds end that contact before a later round takes the first pages again;
//    - after such a growth, a round that came back only in part: the step is kept (the contact
//      ended within it, the rest was cold);
//    - anything else (7.2 counts a read() refault as a restore, not an activation): the smallest.
//    Refaults with nothing freed since the last are that round's late ones: no round of their own.
// 3. Holds. Only when at least half of what the probes freed since the last judgement came back,
//    and three quarters of the last round, are the probes at the bottom: probing holds for a grace,
//    doubling while holds follow each other, up to kMaxHold; a clean stretch ends the row. The
//    first hold of a row is judged once a quarter of what lies above the floor was freed (half once
//    rounds grew), later ones after four smallest steps: a first contact on MGLRU can give back
//    every byte the probes free for a while before the cold cache behind it goes. It holds at once
//    where a refault ends a run through cold cache (a round that freed half of what lay above,
//    under an eighth back; not once rounds grew) or the first round back after aimed probes took
//    their cgroup to its floor (aimDrained()): what the probes met there is the work's.
// 4. Bottoms. A hold marks its level for kMaxHold: probes take only what lies above it and what
//    came back from disk while it held, so a hot set the kernel gives up before the rest of the
//    floor's cache (7.2) is not taken and read back at every hold's end. Past kMaxHold the bottom
//    is tested again. Except the first hold of a row high up (over half of the most that lay above
//    the floor since probing began still there): it may be a first contact, and a bottom there
//    would keep the cold cache below it for half an hour.
// 5. The work run again (an edit and a rebuild) reads back from disk the files the probes took:
//    refaults that are no hot set. From heavy work within a hold on, nothing raises its bottom;
//    and a round judged after heavy work with more back than the probes took since they last had
//    nothing above to take is the work's reads, not the probes': the row ends and judging starts
//    afresh, as for the first run (newWork()). Heavy work alone is no sign: the read that brings
//    a round back can be heavy for a moment, but brings back no more than the probes took.
//
// Pure: fed with the time and the target's figures.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>

#include "base/Clock.h"

namespace reclaimd::controller {

// Filled from the target's policy (Engine::trimLaw), which holds the defaults (policies/Policy.h).
struct TrimLawSettings {
  std::uint64_t minStep;           // the smallest probe (trim.min_step)
  double percent;                  // of what lies above the floor, for the first probe (trim.percent)
  std::uint64_t maxStep;           // the policy's reclaim chunk
  std::chrono::nanoseconds grace;  // the idle grace
};

// A target's cache read back from disk, cumulative, in bytes: refaulted, and of that activated.
struct ReadBack {
  std::uint64_t refaulted = 0;
  std::uint64_t activated = 0;
};

// The longest hold: refaults recurring after every hold make it double up to this.
inline constexpr std::chrono::minutes kMaxHold{30};

// How long probes go without a refault before the step doubles: half the grace (TrimLaw.h).
inline std::chrono::nanoseconds cleanStretch(const TrimLawSettings& s) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(s.grace) / 2;
}

class TrimLaw {
 public:
  // Probing starts (or starts again after a hold) with `above` bytes over the floor.
  void start(TimePoint now, std::uint64_t above, const TrimLawSettings& s);
  // The next probe's size with `above` bytes over the floor: the step, but never more than a
  // quarter of `above` (or the smallest step), nor more than `above`.
  std::uint64_t size(std::uint64_t above, const TrimLawSettings& s) const;
  // A probe is due at `now` with `above` bytes over the floor (or the bottom; 0 where no probe
  // could ask anything): after a clean stretch the step doubles; with nothing above the stretch
  // and the step start again, after a pause the stretch.
  void probed(TimePoint now, std::uint64_t above, const TrimLawSettings& s);
  // No probe is due while heavy work runs, or the kernel refused the last (it took nothing): the
  // stretch starts again at the next probe.
  void paused() { probing_ = false; }
  // Probes that went to a quiet cgroup inside the target took its cache to its floor and come
  // back to the whole (EngineAim.cpp), `above` bytes over its floor: they start again from the
  // first step, and the next round that brings anything back marks the bottom, as the end of a
  // run through cold cache does. What the whole holds then is the busy cgroups' cache: on 6.1,
  // judged as usual (a third of each round back, under the half that holds), probes of the
  // last 22 MiB above the machine's floor read 13 MiB of a busy neighbour's hot set back.
  void aimDrained(TimePoint now, std::uint64_t above, const TrimLawSettings& s);
  // The probes now go to a quiet cgroup inside the target (EngineAim.cpp): the step doubles every
  // probe from here on, without waiting for a clean stretch, until start() (the probes back to the
  // whole). The stretch is there for the kernel to learn what its readers use; a cgroup whose work
  // ended has no reader of its own to learn from. A refault still puts the step back to the
  // smallest and half of what the probes freed coming back still holds: pages of that cgroup a busy
  // one reads (a file both use) are judged as any. Waiting for the stretch, the work's cache left
  // beside a busy background (the matrix's bg cells) reached the bound 0.4-1 minute later (2.1-2.5
  // minutes against 1.5-1.9; on 6.1 the whole's first probes had met the background's hot set and
  // started the stretch again just before the aim).
  void aimed() { aimed_ = true; }
  // A probe freed `bytes`.
  void freed(std::uint64_t bytes);
  // Heavy work runs (every turn it does): no probe is due (paused()), and the next round judged
  // may be its reads (rule 5). Within a hold, what comes back from then on raises no bottom.
  void heavyWork(TimePoint now);
  // Refaults jumped after a probe, the target at `reclaimable` with `total` read back in all (its
  // cumulative counters). Returns the hold, if one starts.
  std::optional<std::chrono::nanoseconds> refaulted(TimePoint now, std::uint64_t reclaimable, ReadBack total,
                                                    const TrimLawSettings& s);

  // What the last refault did to the step, and the round of probes it ended.
  enum class StepAnswer { Smallest, Grown, Kept, Trickle, NewWork };
  struct Round {
    std::uint64_t came = 0;       // bytes read back since the refault before
    std::uint64_t activated = 0;  // of those, activated
    std::uint64_t freed = 0;      // bytes the probes freed since then
  };
  StepAnswer lastAnswer() const { return lastAnswer_; }
  const Round& lastRound() const { return lastRound_; }

  bool held(TimePoint now) const { return now < heldUntil_; }
  // The target's cumulative refaulted bytes at `now`, read every turn while a hold lasts: what
  // comes back from disk by the hold's end raises its bottom, what comes later does not (the work
  // run again reads back what the probes took after the hold: 259 MiB on 7.2, which kept the whole
  // second run's cache for the bottom's half hour).
  void observe(TimePoint now, std::uint64_t refaulted) {
    if (held(now) && !bottomClosed_) refaultedAtHoldEnd_ = refaulted;
  }
  // The level the last hold showed the work's cache at, raised by what came back from disk while
  // it held (`refaulted`: the target's cumulative counter, bytes), while probes stay above it (0
  // after).
  std::uint64_t bottom(TimePoint now, std::uint64_t refaulted) const;
  TimePoint bottomUntil() const { return bottomUntil_; }
  TimePoint heldUntil() const { return heldUntil_; }
  std::uint64_t heldLevel() const { return heldLevel_; }
  std::uint64_t step() const { return step_; }
  unsigned holds() const { return holds_; }
  TimePoint cleanSince() const { return cleanSince_; }

 private:
  // Starts judging afresh from the counter at `refaultedBytes`.
  void rebase(std::uint64_t refaultedBytes);
  // The round of probes since the last refault; all 0 without a last refault to count from.
  Round roundOf(ReadBack total) const;
  // The step after a refault that ended `round`.
  void answer(const Round& round, const TrimLawSettings& s);
  bool ranThroughCold(const Round& round, const TrimLawSettings& s) const;
  // The round that ended is the work run again (rule 5): heavy work since the last judgement, and
  // more back than the probes took since they last had nothing to take.
  bool ranAgain(const Round& ended, const TrimLawSettings& s) const;
  // The work ran again: the row of holds ends and judging starts afresh, as for the first run (the
  // next refault sets the counter to judge by, a first hold high up marks no bottom); the bottom
  // stays, raised by nothing the new work reads. Judged within the old row, the second run's first
  // contact on 7.2 was held after four smallest steps and marked a bottom over its cache.
  void newWork();
  bool trickle(const Round& round, const TrimLawSettings& s) const;
  // What the probes must have freed since judging started before refaults may hold them.
  std::uint64_t evidence(const TrimLawSettings& s) const;

  std::uint64_t step_ = 0;
  std::uint64_t above_ = 0;  // over the floor, as of the last start or probe
  TimePoint cleanSince_{};
  bool probing_ = false;  // the last due probe had something to take, and nothing paused since
  std::optional<std::uint64_t> refaultedAt_;  // the counter when judging started
  std::uint64_t freedSince_ = 0;              // by probes since then
  std::optional<ReadBack> lastBack_;          // the counters at the last refault
  std::uint64_t roundFreed_ = 0;              // by probes since then
  std::uint64_t freedSinceNothing_ = 0;       // by probes since one had nothing above to take
  std::uint64_t roundAbove_ = 0;              // over the floor when this round began
  std::uint64_t startAbove_ = 0;              // the most over the floor since probing began
  bool grewInRow_ = false;                    // a refault grew the step to its round since the row began
  bool drained_ = false;                      // aimDrained(), and no round judged since
  bool aimed_ = false;                        // aimed(), and no start() since
  StepAnswer lastAnswer_ = StepAnswer::Smallest;
  Round lastRound_;
  unsigned holds_ = 0;  // in a row, without a clean stretch between them
  TimePoint heldUntil_{};
  std::uint64_t heldLevel_ = 0;
  std::uint64_t refaultedAtHold_ = 0;     // the counter when the last hold began
  std::uint64_t refaultedAtHoldEnd_ = 0;  // and as last observed while it lasted
  bool bottomClosed_ = false;             // heavy work since the last hold began: nothing raises it
  bool heavySinceJudged_ = false;         // heavy work since the last round was judged
  TimePoint bottomUntil_{};
};

}  // namespace reclaimd::controller

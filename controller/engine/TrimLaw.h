// How big a busy target's next probe is, and when refaults stop probing: the trimming law.
//
// A probe is a small memory.reclaim write; the kernel takes the coldest pages first. Refaults
// after a probe (cache the work reads coming back from disk) say that this probe touched cache
// in use, not that nothing cold is left: an LRU that has not yet seen the work's hot set read
// twice (classic LRU's workingset activation, MGLRU's tiers) gives some of it up at first
// contact, learns from the refault, and keeps it from then on. So:
// - Probes start at the smallest step. A refault puts the step back there; a clean stretch (half
//   the idle grace: longer than the work's re-reads that matter) with no refault doubles it every
//   probe, up to a quarter of what lies above the floor and the reclaim chunk, so cold cache goes
//   in minutes once the kernel knows what is hot (probes aimed at a quiet cgroup double from the
//   first: aimed()). The stretch is the probes' time: where none could be sent (the target at its
//   floor, or waiting out heavy work) it starts again at the first probe after. Waiting is no
//   evidence: the work's hot set, older than the cache the work just left, is what the next probes
//   meet first on a classic LRU, and probes that doubled at once after the work (4, 8, 16 MiB
//   within a second) stalled 6.1's workload 64-615 ms against 13-65 where they did not (the
//   matrix's base cell). At the floor the step starts again too: what lies above later is new
//   cache, and a step grown on the cache that went knows nothing of it (a machine at its floor, a
//   rebuild's heavy rounds over it: a 64 MiB step kept took 64 MiB of the rebuild's working set at
//   the first turn between two rounds, 31 MiB of it read back within the rounds, 6.12). Not after
//   a pause for heavy work: the read that brings back a round that grew can be heavy work, and
//   the step at the smallest again there started the contact over (6.12, the cache read through
//   a mapping: rounds of 2, 4 and 12 MiB, all back, after one of 54 that was).
// - Except, before the first hold of a row, a refault that ends a round whose bytes came back
//   (three quarters or more) activated, counted as workingset_activate_file (kept ahead of the
//   cold cache from then on): the next probe is as large as that whole round (at least twice
//   the step). The kernel is giving up a hot set that lies behind cold cache in its order and
//   keeps each page once read back (6.12's MGLRU with the cold cache read through a mapping
//   after the hot set: every probe takes hot pages until the whole hot set was read back
//   once). That cost is fixed; larger rounds pay it within two minutes instead of spreading it
//   over five. Rounds that only doubled (6, 12, 24, 48 MiB at three probes a round) took a
//   round longer, long enough for the kernel to mark the pages read back first as its
//   workingset, and a later round took 32-48 MiB of those again: restored, which the kernel
//   counts as a stall (24-66 ms, in 7 boots of 10). Grown to the round (6, 18, 54) none was
//   restored in 10 of 10, the stall 0-1.6 ms. Where refaults are not activations (7.2 counts a
//   read() refault as a restore), rounds that doubled met a kernel that had not learned and read
//   the hot set back twice as fast: the smallest step there. After a round that grew, a round
//   that came back only in part keeps the step, activated or not (the contact ended within it;
//   the rest was cold): on 6.12 with the cold cache read through a mapping such a round's
//   refaults were in most boots not activated (0-0.2 of 8-41 MiB), and back at the smallest step
//   the cold cache behind the contact waited a clean minute more (at the bound after 3.8 min
//   against 2.5, ten boots each). After a hold the first contact is over, and what comes back is
//   the bottom's: the smallest step too. Refaults with nothing freed since the last are that
//   round's late ones (the probes come every few seconds, the work re-reads every tens): no round
//   of their own.
// - Except a trickle: a round of smallest probes (four or more) of which under an eighth came
//   back leaves the step and the clean stretch as they were. The probes are taking cold cache
//   and met the edge of the work's (late pages of a read, a few of a hot set); starting the
//   stretch again there kept 7.2's probes at the smallest step, 40 MiB a minute, for minutes
//   after its first contact with a hot set read once a minute (rounds of 30-40 MiB, 1-2 MiB
//   back each). Not once the step grew: a refault that ends a run of larger probes marks the
//   edge of the work's cache, and the next larger probes would take it.
// - Only when what came back from disk since the previous refault is at least half of what the
//   probes freed since, and three quarters of the last round's bytes, are the probes at the
//   bottom: what is left is the work's. Then probing holds for a grace, doubling while it stays
//   so right after each hold, up to kMaxHold. A clean stretch ends the escalation. A kernel
//   still learning gives back a little of much: no hold.
// - Except a refault that ends a run through cold cache (a round that freed half of what lay
//   above the floor when it began, under an eighth of it back): what the probes met at its end
//   is the work's, and probing holds at once. Judged as above, the next probes took what the
//   work reads next (7.2, a hot set read once a minute: ~40 MiB more, read back at its next
//   read). A hot set first read while the cold cache was, between older and newer cold cache,
//   could hold the newer cold cache behind it until the bottom is tested again; measured, the
//   hot set's later reads keep it ahead of the newer cold cache (6.1, 6.12, 7.2). Not once
//   rounds grew in the row: the kernel was giving up a hot set that lies among its cold
//   cache, and pages of it met at the end of a long round are the contact's last, not the
//   bottom (6.12 with the cold cache read through a mapping: a round of 54 MiB read back, then
//   215 MiB freed with 15 back, held, and 173 MiB of cold cache waited out the hold).
//   Likewise after probes aimed at a quiet cgroup took its cache to its floor (aimDrained()):
//   the first round back is the busy cgroups' cache, the bottom.
// - The first hold in a row is judged over a quarter of what lies above the floor, later ones
//   over four smallest steps. A kernel's first contact with a hot set can give back every byte
//   the probes free for a long while: MGLRU leaves a file read with read() in the generation it
//   was read into, so where the cold cache was read after it (through a mapping on 6.12, once
//   on 7.2) the hot set lies in older generations than much of that cache, and it comes back
//   until the kernel keeps it (68-100 MiB of a 100 MiB hot set on 6.12, 20-42 MiB on 7.2);
//   then the cold cache behind it goes. Judged over 16 MiB, that contact held probing for 2
//   and then 4 minutes, and the cold cache was still there 10 minutes after the work (6.12).
//   Once rounds grew in a row its first hold is judged over half: over a quarter, a 100 MiB
//   contact with 374 MiB above held at its very end (its last refaults came in after the
//   rounds had stopped growing), and the cold cache behind it waited a grace (6.12).
//   At the bottom, the wider first judgement costs that quarter (or half) read back once.
// - A hold marks the bottom: for kMaxHold after it, probes take only what lies above the level
//   it held at and what came back from disk since (cache read since for the first time), not the
//   work's cache below it again. A hot set the work reads once a minute, which the kernel gives
//   up before the rest of the floor's cache (7.2, read()), was otherwise taken at every hold's
//   end and read back each time (24 MiB a hold, 83 MiB in 20 minutes at the holds' doubling).
//   What comes back after the hold counts too: a hold can be judged before the work has read
//   back all that the probes took (a hot set read once a minute, a read that pauses), and a
//   bottom under the work's cache would let the next probes take it again at every read (the
//   engine's simulation: 60 MiB read back after a hold, 16 MiB of it taken and read back again
//   and a second hold). Past kMaxHold the bottom is tested again. Except the first hold of a
//   row high up, with more than half of the most that lay above the floor since probing began
//   still there: it may be a first contact (7.2, a hot set given up first, judged the bottom at
//   460 MiB of 500), and a bottom there keeps the cold cache below it half an hour. It holds for
//   its grace and marks none. The most since, not what lay above at the start: probing that
//   began before the work filled the cache (the background alone, under its floor) began with
//   nothing above, and every first hold was high up against that (7.2, a hot set read once a
//   minute: held with 164 MiB of the work's 372 above, no bottom marked, and the probes below
//   took the hot set again at each of its reads, 21 % of it a minute).
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
  // Refaults jumped after a probe, the target at `reclaimable` with `total` read back in all (its
  // cumulative counters). Returns the hold, if one starts.
  std::optional<std::chrono::nanoseconds> refaulted(TimePoint now, std::uint64_t reclaimable, ReadBack total,
                                                    const TrimLawSettings& s);

  // What the last refault did to the step, and the round of probes it ended.
  enum class StepAnswer { Smallest, Grown, Kept, Trickle };
  struct Round {
    std::uint64_t came = 0;       // bytes read back since the refault before
    std::uint64_t activated = 0;  // of those, activated
    std::uint64_t freed = 0;      // bytes the probes freed since then
  };
  StepAnswer lastAnswer() const { return lastAnswer_; }
  const Round& lastRound() const { return lastRound_; }

  bool held(TimePoint now) const { return now < heldUntil_; }
  // The level the last hold showed the work's cache at, raised by what came back from disk since
  // (`refaulted`: the target's cumulative counter, bytes), while probes stay above it (0 after).
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
  std::uint64_t refaultedAtHold_ = 0;  // the counter when the last hold began
  TimePoint bottomUntil_{};
};

}  // namespace reclaimd::controller

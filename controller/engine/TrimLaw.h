// How big a busy target's next probe is, and when refaults stop probing: the trimming law.
//
// A probe is a small memory.reclaim write; the kernel takes the coldest pages first. Refaults
// after a probe (cache the work reads coming back from disk) say that this probe touched cache
// in use, not that nothing cold is left: an LRU that has not yet seen the work's hot set read
// twice (classic LRU's workingset activation, MGLRU's tiers) gives some of it up at first
// contact, learns from the refault, and keeps it from then on. So:
// - Probes start at the smallest step. A refault puts the step back there; a clean stretch (half
//   the idle grace: longer than the work's re-reads that matter) with no refault doubles it
//   every probe, up to a quarter of what lies above the floor and the reclaim chunk, so cold
//   cache goes in minutes once the kernel knows what is hot.
// - Only when what came back from disk since the previous refault is at least half of what the
//   probes freed since are the probes at the bottom: what is left is the work's. Then probing
//   holds for a grace, doubling while it stays so right after each hold, up to kMaxHold. A clean
//   stretch ends the escalation. A kernel still learning gives back a little of much: no hold.
// - The first hold in a row is judged over a quarter of what lies above the floor, later ones
//   over four smallest steps. A kernel's first contact with a hot set can give back every byte
//   the probes free for a long while: MGLRU leaves a file read with read() in the generation it
//   was read into, so where the cold cache was read after it (through a mapping on 6.12, once
//   on 7.2) the hot set lies in older generations than much of that cache, and it comes back
//   until the kernel keeps it (68-100 MiB of a 100 MiB hot set on 6.12, 20-42 MiB on 7.2);
//   then the cold cache behind it goes. Judged over 16 MiB, that contact held probing for 2
//   and then 4 minutes, and the cold cache was still there 10 minutes after the work (6.12).
//   At the bottom, the wider first judgement costs that quarter read back once.
// Pure: fed with the time and the target's figures.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>

#include "base/Clock.h"

namespace reclaimd::controller {

struct TrimLawSettings {
  std::uint64_t minStep = 4ULL << 20;    // the smallest probe (trim.min_step)
  double percent = 1;                    // of what lies above the floor, for the first probe
  std::uint64_t maxStep = 256ULL << 20;  // the policy's reclaim step
  std::chrono::nanoseconds grace = std::chrono::minutes(2);  // the idle grace
};

// The longest hold: refaults recurring after every hold make it double up to this.
inline constexpr std::chrono::minutes kMaxHold{30};

class TrimLaw {
 public:
  // Probing starts (or starts again after a hold) with `above` bytes over the floor.
  void start(TimePoint now, std::uint64_t above, const TrimLawSettings& s);
  // The next probe's size with `above` bytes over the floor: the step, but never more than a
  // quarter of `above` (or the smallest step), nor more than `above`.
  std::uint64_t size(std::uint64_t above, const TrimLawSettings& s) const;
  // A probe is due at `now` with `above` bytes over the floor: after a clean stretch the step
  // doubles.
  void probed(TimePoint now, std::uint64_t above, const TrimLawSettings& s);
  // A probe freed `bytes`.
  void freed(std::uint64_t bytes);
  // Refaults jumped after a probe, the target at `reclaimable` with `refaultedBytes` read back
  // in all (its cumulative counter). Returns the hold, if one starts.
  std::optional<std::chrono::nanoseconds> refaulted(TimePoint now, std::uint64_t reclaimable,
                                                    std::uint64_t refaultedBytes, const TrimLawSettings& s);

  bool held(TimePoint now) const { return now < heldUntil_; }
  TimePoint heldUntil() const { return heldUntil_; }
  std::uint64_t heldLevel() const { return heldLevel_; }
  std::uint64_t step() const { return step_; }
  unsigned holds() const { return holds_; }
  TimePoint cleanSince() const { return cleanSince_; }

 private:
  // Starts judging afresh from the counter at `refaultedBytes`.
  void rebase(std::uint64_t refaultedBytes);
  // What the probes must have freed since judging started before refaults may hold them.
  std::uint64_t evidence(const TrimLawSettings& s) const;

  std::uint64_t step_ = 0;
  std::uint64_t above_ = 0;  // over the floor, as of the last start or probe
  TimePoint cleanSince_{};
  std::optional<std::uint64_t> refaultedAt_;  // the counter when judging started
  std::uint64_t freedSince_ = 0;              // by probes since then
  unsigned holds_ = 0;  // in a row, without a clean stretch between them
  TimePoint heldUntil_{};
  std::uint64_t heldLevel_ = 0;
};

}  // namespace reclaimd::controller

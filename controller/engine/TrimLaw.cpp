#include "controller/engine/TrimLaw.h"

#include <algorithm>

#include "base/Checked.h"

namespace reclaimd::controller {

namespace {

std::uint64_t cap(std::uint64_t above, const TrimLawSettings& s) {
  return std::max(s.minStep, std::min(s.maxStep, above / 4));
}

// `n` smallest probes, saturating.
std::uint64_t smallest(const TrimLawSettings& s, std::uint64_t n) {
  return s.minStep > UINT64_MAX / n ? UINT64_MAX : n * s.minStep;
}

// `percent` of `bytes`, saturating: a double at or over 2^64 has no integer to convert to.
std::uint64_t percentOf(std::uint64_t bytes, double percent) {
  const double share = static_cast<double>(bytes) * std::clamp(percent, 0.0, 100.0) / 100.0;
  return share >= 18446744073709551615.0 ? bytes : static_cast<std::uint64_t>(share);
}

// The step probing starts with at `above` over the floor: `percent` of it, within the caps.
std::uint64_t firstStep(std::uint64_t above, const TrimLawSettings& s) {
  return std::min(std::max(percentOf(above, s.percent), s.minStep), cap(above, s));
}

}  // namespace

void TrimLaw::start(TimePoint now, std::uint64_t above, const TrimLawSettings& s) {
  step_ = firstStep(above, s);
  above_ = above;
  roundAbove_ = above;
  if (holds_ == 0) startAbove_ = above;
  cleanSince_ = now;
  probing_ = above > 0;
  if (above == 0) freedSinceNothing_ = 0;
  aimed_ = false;
}

void TrimLaw::aimDrained(TimePoint now, std::uint64_t above, const TrimLawSettings& s) {
  // Where probing began, not here: the bottom found next is low, not a first contact high up.
  const std::uint64_t began = startAbove_;
  start(now, above, s);
  startAbove_ = std::max(began, above);
  drained_ = true;
}

std::uint64_t TrimLaw::size(std::uint64_t above, const TrimLawSettings& s) const {
  return std::min({step_, cap(above, s), above});
}

void TrimLaw::probed(TimePoint now, std::uint64_t above, const TrimLawSettings& s) {
  above_ = above;
  // Probing that began before the work filled the cache (the background alone, under its floor)
  // began with next to nothing above: a first hold is high up against the most since.
  if (holds_ == 0) startAbove_ = std::max(startAbove_, above);
  // Nothing to probe (at the floor, or at the bottom a hold showed) is no clean stretch: no
  // probe met the work's cache. Waiting there neither grows the step nor ends the escalation;
  // nor does a pause, and the first probe after either starts the stretch again. With nothing
  // above, the step starts again too: what lies above later is cache it was not grown on.
  if (above == 0 || !probing_) cleanSince_ = now;
  if (above == 0) {
    step_ = firstStep(above, s);
    freedSinceNothing_ = 0;
  }
  probing_ = above > 0;
  if (now - cleanSince_ >= cleanStretch(s)) {
    holds_ = 0;
    grewInRow_ = false;
  } else if (!aimed_ || above == 0) {
    return;
  }
  // Saturating: a step near 2^63 stays where it is rather than wrapping.
  const std::uint64_t doubled = step_ > UINT64_MAX / 2 ? step_ : 2 * step_;
  step_ = std::max(step_, std::min(doubled, cap(above, s)));
}

void TrimLaw::freed(std::uint64_t bytes) {
  freedSince_ = saturatingAdd(freedSince_, bytes);
  roundFreed_ = saturatingAdd(roundFreed_, bytes);
  freedSinceNothing_ = saturatingAdd(freedSinceNothing_, bytes);
}

void TrimLaw::rebase(std::uint64_t refaultedBytes) {
  refaultedAt_ = refaultedBytes;
  freedSince_ = 0;
}

std::uint64_t TrimLaw::evidence(const TrimLawSettings& s) const {
  const std::uint64_t steps = smallest(s, 4);
  // Rounds that grew met a kernel keeping what comes back: the contact may take more of the
  // cache before it ends, and a hold at its end keeps the cold cache behind it.
  return holds_ > 0 ? steps : std::max(steps, grewInRow_ ? above_ / 2 : above_ / 4);
}

// A round that freed half of what lay above the floor when it began (and sixteen smallest steps),
// of which under an eighth came back: the probes ran through cold cache, and what they met at
// its end is the work's. (A first contact on 7.2 passes 70 MiB of 333 in one round with a
// megabyte back: not the end of the cold cache.) Not after rounds that grew in this row: the
// pages met then are the contact's last (TrimLaw.h).
bool TrimLaw::ranThroughCold(const Round& round, const TrimLawSettings& s) const {
  return !grewInRow_ && round.freed >= std::max(smallest(s, 16), roundAbove_ / 2) && round.came > 0 &&
         round.came < round.freed / 8;
}

// A trickle (TrimLaw.h): a round of four smallest probes or more, under an eighth of it back.
bool TrimLaw::trickle(const Round& round, const TrimLawSettings& s) const {
  return step_ <= s.minStep && round.freed >= smallest(s, 4) && round.came < round.freed / 8;
}

std::uint64_t TrimLaw::bottom(TimePoint now, std::uint64_t refaulted) const {
  if (now >= bottomUntil_) return 0;
  // Past the hold, or from heavy work within it, what comes back is no part of it: the work run
  // again reads back what the probes took (TrimLaw.h, rule 5).
  if (!held(now) || bottomClosed_) refaulted = std::min(refaulted, refaultedAtHoldEnd_);
  // A counter that went back (a new cgroup under the old name) says nothing of what came back.
  const std::uint64_t back = refaulted >= refaultedAtHold_ ? refaulted - refaultedAtHold_ : 0;
  return saturatingAdd(heldLevel_, back);
}

void TrimLaw::heavyWork(TimePoint now) {
  paused();
  heavySinceJudged_ = true;
  if (held(now)) bottomClosed_ = true;
}

void TrimLaw::newWork() {
  refaultedAt_.reset();
  lastBack_.reset();
  freedSince_ = 0;
  roundFreed_ = 0;
  startAbove_ = 0;
  grewInRow_ = false;
  drained_ = false;
  holds_ = 0;
  freedSinceNothing_ = 0;
}

TrimLaw::Round TrimLaw::roundOf(ReadBack total) const {
  // A counter that went back (a new cgroup under the old name) says nothing of this round.
  if (!lastBack_ || total.refaulted < lastBack_->refaulted || total.activated < lastBack_->activated) return {};
  return Round{total.refaulted - lastBack_->refaulted, total.activated - lastBack_->activated, roundFreed_};
}

// Three quarters or more (x - x / 4 never wraps). After a hold the first contact is over: what
// comes back then is the bottom's, and the step is the smallest.
void TrimLaw::answer(const Round& round, const TrimLawSettings& s) {
  const bool activated = round.came > 0 && round.activated >= round.came - round.came / 4;
  const bool cameBack = round.freed > 0 && round.came >= round.freed - round.freed / 4;
  if (trickle(round, s)) {
    lastAnswer_ = StepAnswer::Trickle;  // the step and the clean stretch go on
  } else if (holds_ == 0 && activated && cameBack) {
    const std::uint64_t doubled = step_ > UINT64_MAX / 2 ? step_ : 2 * step_;
    // As large as the whole round: fewer rounds end the contact before the kernel has marked
    // what came back first as its workingset (TrimLaw.h).
    step_ = std::max(s.minStep, std::min(std::max(doubled, round.freed), cap(above_, s)));
    lastAnswer_ = StepAnswer::Grown;
  } else if (holds_ == 0 && !cameBack && lastAnswer_ == StepAnswer::Grown) {
    lastAnswer_ = StepAnswer::Kept;  // the contact ended within this round: the rest of it was cold
  } else {
    step_ = s.minStep;
    lastAnswer_ = StepAnswer::Smallest;
  }
  grewInRow_ = grewInRow_ || lastAnswer_ == StepAnswer::Grown;
  lastRound_ = round;
}

// A read that brings back what a probe took can be heavy for a moment, but brings back no more
// than the probes took since they last had nothing to take (and four smallest steps for what came
// late of the round before): what they took before that the work had not read for as long.
bool TrimLaw::ranAgain(const Round& ended, const TrimLawSettings& s) const {
  const std::uint64_t took = std::min(ended.freed, freedSinceNothing_);
  return heavySinceJudged_ && ended.came > took && ended.came - took > smallest(s, 4);
}

std::optional<std::chrono::nanoseconds> TrimLaw::refaulted(TimePoint now, std::uint64_t reclaimable, ReadBack total,
                                                           const TrimLawSettings& s) {
  const std::uint64_t refaultedBytes = total.refaulted;
  // Nothing freed since the last refault: these are that round's late refaults (the work reads
  // its hot set every tens of seconds, the probes come every few). That round was answered;
  // they count toward the next hold's judgement, not as a round of their own.
  if (lastBack_ && roundFreed_ == 0 && total.refaulted >= lastBack_->refaulted &&
      total.activated >= lastBack_->activated) {
    lastBack_ = total;
    cleanSince_ = now;
    return std::nullopt;
  }
  const Round ended = roundOf(total);
  const bool rerun = ranAgain(ended, s);
  heavySinceJudged_ = false;
  if (rerun) newWork();
  const Round round = rerun ? Round{} : ended;
  const bool passedCold = (drained_ && round.came > 0) || ranThroughCold(round, s);
  if (round.came > 0) drained_ = false;
  answer(round, s);
  if (rerun) lastAnswer_ = StepAnswer::NewWork;
  if (lastAnswer_ != StepAnswer::Trickle) cleanSince_ = now;
  lastBack_ = total;
  roundFreed_ = 0;
  roundAbove_ = above_;
  // A counter that went back (a new cgroup under the old name) has no history to judge by.
  if (!refaultedAt_ || refaultedBytes < *refaultedAt_) {
    rebase(refaultedBytes);
    return std::nullopt;
  }
  if (!passedCold && freedSince_ < evidence(s)) return std::nullopt;  // too little probed yet to judge
  const std::uint64_t back = refaultedBytes - *refaultedAt_;
  // The bottom: half of what the probes freed came back, and the last round still comes back,
  // three quarters of it (a first contact that ended within the round left cold cache there).
  const bool bottom = passedCold || (back >= freedSince_ / 2 && round.came >= round.freed - round.freed / 4);
  rebase(refaultedBytes);
  if (!bottom) return std::nullopt;
  ++holds_;
  auto hold = std::chrono::duration_cast<std::chrono::nanoseconds>(s.grace);
  for (unsigned i = 1; i < holds_ && hold < kMaxHold; ++i) hold *= 2;
  hold = std::min<std::chrono::nanoseconds>(hold, kMaxHold);
  heldUntil_ = now + hold;
  heldLevel_ = reclaimable;
  refaultedAtHold_ = refaultedBytes;
  refaultedAtHoldEnd_ = refaultedBytes;
  bottomClosed_ = false;
  // The first hold of a row with more than half of what lay above the floor when probing began
  // still there may be a first contact, not the bottom: it holds, but marks none (7.2, a hot set
  // read once a minute and given up first: held at 460 MiB of 500, and the half-hour bottom kept
  // the cold cache below it to the end).
  const bool high = holds_ == 1 && above_ > startAbove_ / 2;
  bottomUntil_ = high ? now : now + kMaxHold;
  return hold;
}

}  // namespace reclaimd::controller

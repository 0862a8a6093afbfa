// A place where memory pressure is watched: the machine, or one reclaim target. Pure: fed with
// readings of the pressure file's `total` and told how the shell watches it.
//
// A scope learns of pressure two ways: a PSI trigger's event (the moment the kernel sees the
// stall cross the threshold), and its `total` read on samples and between chunks (after an event
// the kernel sends no other for the rest of its window, and where no trigger can be registered
// this is the only way).
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include "base/Clock.h"
#include "controller/engine/Backoff.h"
#include "policies/Policy.h"
#include "psi/Meter.h"
#include "psi/TriggerSpec.h"

namespace reclaimd::controller {

// How pressure readings reach a scope: by a PSI trigger, by polling its totals, or not at all.
enum class PressureFeed {
  Pending,  // not opened yet
  Trigger,  // a PSI trigger wakes the loop; totals are read only while backed off
  Polling,  // totals are read on every sample (no trigger could be registered)
  Off,      // the file cannot be read: no pressure watching here
};

const char* toString(PressureFeed feed);

BackoffConfig backoffConfigOf(const policies::PressureSettings& s);

class Scope {
 public:
  Scope(std::string label, const policies::PressureSettings& settings);

  // Records a total read at `now`: true when the stall in the last window reached the threshold.
  // `ownUsec` is the stall reclaimd caused itself so far (cumulative): a memory.reclaim write
  // puts the writer in memstall, which PSI charges to reclaimd's cgroup and so to the machine,
  // and must not make reclaimd back off from its own work.
  bool add(TimePoint now, std::uint64_t totalUsec, std::uint64_t ownUsec = 0);

  void setFeed(PressureFeed feed, std::string why) {
    feed_ = feed;
    why_ = std::move(why);
  }
  PressureFeed feed() const { return feed_; }
  // Its file is read: opened, and not given up on.
  bool readsTotals() const { return feed_ != PressureFeed::Off && feed_ != PressureFeed::Pending; }
  const std::string& why() const { return why_; }
  // Totals must be read on a sample: where no trigger wakes us, and while backed off (the
  // kernel sends one event per window; the calm period needs every window).
  bool needsTotals() const {
    return feed_ == PressureFeed::Polling || (feed_ == PressureFeed::Trigger && backoff_.active());
  }

  const std::string& label() const { return label_; }
  const psi::TriggerSpec& spec() const { return spec_; }
  std::chrono::microseconds lastStall() const { return lastStall_; }
  // The readings span a whole window: lastStall() is a measurement.
  bool measured() const { return meter_.covers(spec_.window); }
  Backoff& backoff() { return backoff_; }
  const Backoff& backoff() const { return backoff_; }
  // Takes over `old`'s backoff (under this scope's settings) and counters: a scope made again
  // for a new policy keeps a backoff in progress, so a reload never ends its calm period.
  void inherit(const Scope& old) {
    const BackoffConfig config = backoff_.config();
    backoff_ = old.backoff_;
    backoff_.reconfigure(config);
    events = old.events;
    backoffs = old.backoffs;
  }
  std::uint64_t events = 0;    // trigger events seen
  std::uint64_t backoffs = 0;  // backoffs begun

 private:
  std::string label_;
  psi::TriggerSpec spec_;
  std::chrono::nanoseconds span_;
  psi::Meter meter_;
  std::optional<TimePoint> lastAt_;
  Backoff backoff_;
  PressureFeed feed_ = PressureFeed::Pending;
  std::string why_;
  std::chrono::microseconds lastStall_{0};
};

}  // namespace reclaimd::controller

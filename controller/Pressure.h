// Where memory pressure is watched: the machine (/proc/pressure/memory) and each reclaim
// target (its memory.pressure), with one Backoff each.
//
// A scope is told of pressure two ways: a PSI trigger's event (PressureWatch, the moment the
// kernel sees the stall cross the threshold), and its `total` read on every sample and between
// chunks (after an event the kernel sends no other for the rest of its window, and where no
// trigger can be registered this is the only way). The event source is any fd, so tests use an
// eventfd (epoll on a regular file fails with EPERM: fixtures cannot produce PSI events).
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/Clock.h"
#include "base/Files.h"
#include "base/UniqueFd.h"
#include "controller/Backoff.h"
#include "policies/Policy.h"
#include "psi/Meter.h"
#include "psi/Trigger.h"

namespace reclaimd::controller {

BackoffConfig backoffConfigOf(const policies::PressureSettings& s);

class PressureScope {
 public:
  PressureScope(std::string label, const policies::PressureSettings& settings);

  // Opens `file` in `dirFd` for its totals and registers a trigger on it; what fails is kept
  // in why() (totals unreadable: no pressure watching at all; trigger refused: polling).
  void open(int dirFd, const std::string& file);
  // Uses the eventfd `fd` as the event source instead of a PSI trigger (tests).
  void useEventSource(UniqueFd fd);
  // Stops using the event source (not pollable, or its cgroup went away): totals only.
  void dropEventSource(std::string why);

  int eventFd() const { return events_ ? events_.get() : -1; }
  // "trigger", "polling" or "off", for status and metrics.
  const char* watch() const { return events_ ? "trigger" : totals_ ? "polling" : "off"; }
  // An eventfd signals with EPOLLIN and must be read; a PSI trigger signals with EPOLLPRI only
  // (its poll always reports EPOLLIN|EPOLLOUT too, so EPOLLIN must never be asked of it).
  bool eventIsEventfd() const { return eventfd_; }
  bool readable() const { return totals_.has_value(); }
  const std::string& why() const { return why_; }
  const std::string& label() const { return label_; }
  std::string triggerText() const { return psi::triggerText(spec_); }

  // Reads `total` at `now`: true when the stall in the last window reached the threshold.
  // `own` is the stall reclaimd caused itself so far (cumulative; see Daemon::ownStall_): a
  // memory.reclaim write puts the writer in memstall, which PSI charges to reclaimd's cgroup and
  // so to the machine, and must not make reclaimd back off from its own work.
  bool sample(TimePoint now, std::chrono::microseconds own = std::chrono::microseconds(0));
  std::chrono::microseconds lastStall() const { return lastStall_; }
  std::chrono::microseconds threshold() const { return spec_.stall; }
  std::chrono::microseconds window() const { return spec_.window; }

  Backoff& backoff() { return backoff_; }
  const Backoff& backoff() const { return backoff_; }
  std::uint64_t events = 0;    // trigger events seen
  std::uint64_t backoffs = 0;  // backoffs begun

 private:
  std::string label_;
  psi::TriggerSpec spec_;
  UniqueFd events_;
  bool eventfd_ = false;
  std::optional<KeptFile> totals_;
  psi::Meter meter_;
  Backoff backoff_;
  std::string why_;
  std::chrono::microseconds lastStall_{0};
};

struct WatchEvent {
  std::uint32_t id = 0;
  bool gone = false;  // EPOLLERR/EPOLLHUP: the cgroup was removed
};

// An epoll set over the scopes' event fds. Its own fd is readable when any of them fired, so
// the daemon nests it in its main epoll and also drains it between reclaim chunks.
class PressureWatch {
 public:
  PressureWatch();
  int fd() const { return epoll_.get(); }

  // Watches `scope`'s event fd under `id` (ids are 31 bits). Errors: the epoll_ctl errno (EPERM: the fd cannot
  // be waited on, e.g. a regular file standing in for a pressure file).
  Result<void> add(const PressureScope& scope, std::uint32_t id);

  // The scopes that fired since the last call (non-blocking). Drains eventfds. A PSI event is
  // consumed by the poll itself, so each is reported exactly once.
  std::vector<WatchEvent> take();

 private:
  UniqueFd epoll_;
};

}  // namespace reclaimd::controller

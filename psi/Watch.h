// The pressure files reclaimd keeps open: each with its totals re-read by pread and, where the
// kernel takes one, a PSI trigger; and one epoll set over the triggers.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/Files.h"
#include "base/Result.h"
#include "base/UniqueFd.h"
#include "psi/Trigger.h"

namespace reclaimd::psi {

class Source {
 public:
  // Opens `name` in `dirFd` for its totals and registers `spec` on it. What fails is kept:
  // totals unreadable (readable() says why: no pressure watching here), or the trigger refused
  // (trigger() says why: totals must be polled).
  static Source open(int dirFd, const std::string& name, const TriggerSpec& spec);
  // A source whose file could not be opened at all (its cgroup's directory is gone).
  static Source failed(Error why);
  void dropTrigger(Error why);

  // Whether totals can be read; the Error is why not.
  Result<void> readable() const;
  // The trigger's fd; the Error is why there is none.
  Result<int> trigger() const;
  // The "some" total, microseconds. Errors: why the file could not be opened, the read errno,
  // or Errc::Parse.
  Result<std::uint64_t> someTotal();

 private:
  Source(Result<KeptFile> totals, Result<UniqueFd> trigger)
      : totals_(std::move(totals)), trigger_(std::move(trigger)) {}

  Result<KeptFile> totals_;
  Result<UniqueFd> trigger_;
};

struct WatchEvent {
  std::uint32_t id = 0;
  bool gone = false;  // EPOLLERR/EPOLLHUP: the cgroup was removed
};

// An epoll set over trigger fds. Its own fd is readable when any of them fired, so the daemon
// nests it in its main epoll and also drains it between reclaim chunks.
class Watch {
 public:
  Watch();
  int fd() const { return epoll_.get(); }

  // Watches `source`'s trigger under `id` (31 bits). Errors: the epoll_ctl errno (EPERM: the fd
  // cannot be waited on, e.g. a regular file standing in for a pressure file).
  Result<void> add(const Source& source, std::uint32_t id);
  // The sources that fired since the last call (non-blocking). A PSI event is consumed by the
  // poll itself, so each is reported exactly once.
  std::vector<WatchEvent> take();

 private:
  UniqueFd epoll_;
};

}  // namespace reclaimd::psi

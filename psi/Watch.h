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
  // Opens `name` in `dirFd` for its totals and registers `spec` on it. What fails is kept in
  // why(): totals unreadable (readable() false: no pressure watching here), or the trigger
  // refused (triggerFd() -1: totals must be polled).
  static Source open(int dirFd, const std::string& name, const TriggerSpec& spec);
  // A stand-in event source (an eventfd) instead of a PSI trigger: tests.
  void useEventSource(UniqueFd fd);
  void dropTrigger(std::string why);

  bool readable() const { return totals_.has_value(); }
  int triggerFd() const { return trigger_ ? trigger_.get() : -1; }
  bool isEventfd() const { return eventfd_; }
  const std::string& why() const { return why_; }
  // The "some" total, microseconds. Errors: the read errno, or Errc::Parse.
  Result<std::uint64_t> someTotal();

 private:
  std::optional<KeptFile> totals_;
  UniqueFd trigger_;
  bool eventfd_ = false;
  std::string why_;
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
  // The sources that fired since the last call (non-blocking). Drains eventfds; a PSI event is
  // consumed by the poll itself, so each is reported exactly once.
  std::vector<WatchEvent> take();

 private:
  UniqueFd epoll_;
};

}  // namespace reclaimd::psi

// PSI triggers: the kernel wakes us (EPOLLPRI) the moment stall time in a window crosses a
// threshold, instead of us polling for it.
//
// One trigger per open file: the file is opened O_RDWR|O_NONBLOCK, "some <stall_us>
// <window_us>" is written to it, and the fd is watched for EPOLLPRI; closing it removes the
// trigger. The kernel sends at most one event per window; EPOLLERR/EPOLLHUP mean the cgroup was
// removed. Windows must be 500 ms..10 s (EINVAL otherwise); without CAP_SYS_RESOURCE only windows
// that are multiples of 2 s (6.4+, EINVAL too); PSI compiled in but off (Debian without psi=1)
// fails with EOPNOTSUPP.
#pragma once

#include <chrono>
#include <string>

#include "base/Result.h"
#include "base/UniqueFd.h"
#include "psi/TriggerSpec.h"

namespace reclaimd::psi {

class Trigger {
 public:
  // Opens `name` in directory `dirFd` and registers the trigger. Errors: the open or write
  // errno, with a hint for the usual ones (EOPNOTSUPP: psi=0; EINVAL: window out of range;
  // EPERM/EACCES: no privilege for this window).
  static Result<Trigger> open(int dirFd, const std::string& name, const TriggerSpec& spec);

  int fd() const { return fd_.get(); }
  const std::string& name() const { return name_; }
  // Hands the fd over; the trigger lives as long as the fd stays open.
  UniqueFd release() { return std::move(fd_); }

 private:
  Trigger(UniqueFd fd, std::string name) : fd_(std::move(fd)), name_(std::move(name)) {}
  UniqueFd fd_;
  std::string name_;
};

}  // namespace reclaimd::psi

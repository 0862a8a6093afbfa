// The event loop: one epoll, a handler table. Each registered fd carries its handler in the
// epoll event's data (as lmkd does), so a new event source is one add(), not another branch.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "base/Result.h"
#include "base/UniqueFd.h"

namespace reclaimd::controller {

class Loop {
 public:
  using Handler = std::function<void()>;

  // Errors: the epoll_create1 errno.
  static Result<Loop> create();

  // Runs `handler` whenever `fd` is readable (or has `events`). Within one wake-up, handlers run
  // in order of `rank`, lowest first: signals before pressure before the timer, so a SIGTERM that
  // arrives with a timer tick never waits for a reclaim step. Errors: the epoll_ctl errno.
  Result<void> add(int fd, Handler handler, int rank, std::uint32_t events = 0x001 /* EPOLLIN */);

  // Waits and dispatches until stop() is called from a handler. Errors: the epoll_wait errno.
  Result<void> run();
  void stop() { stopped_ = true; }
  bool stopped() const { return stopped_; }

 private:
  struct Entry {
    int fd;
    int rank;
    Handler handler;
  };
  explicit Loop(UniqueFd epoll) : epoll_(std::move(epoll)) {}

  UniqueFd epoll_;
  std::vector<std::unique_ptr<Entry>> entries_;
  bool stopped_ = false;
};

}  // namespace reclaimd::controller

#include "controller/shell/Loop.h"

#include <sys/epoll.h>

#include <algorithm>
#include <cerrno>

namespace reclaimd::controller {

Result<Loop> Loop::create() {
  UniqueFd epoll(::epoll_create1(EPOLL_CLOEXEC));
  if (!epoll) return errnoError(errno, "epoll_create1");
  return Loop(std::move(epoll));
}

Result<void> Loop::add(int fd, Handler handler, int rank, std::uint32_t events) {
  auto entry = std::make_unique<Entry>(Entry{fd, rank, std::move(handler)});
  epoll_event ev{};
  ev.events = events;
  ev.data.ptr = entry.get();
  if (::epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, fd, &ev) != 0) return errnoError(errno, "epoll_ctl add");
  entries_.push_back(std::move(entry));
  return {};
}

Result<void> Loop::run() {
  constexpr int kMax = 16;
  while (!stopped_) {
    epoll_event events[kMax];
    const int n = ::epoll_wait(epoll_.get(), events, kMax, -1);
    if (n < 0) {
      if (errno == EINTR) continue;
      return errnoError(errno, "epoll_wait");
    }
    std::vector<Entry*> ready;
    for (int i = 0; i < n; ++i)
      ready.push_back(static_cast<Entry*>(events[i].data.ptr));
    std::stable_sort(ready.begin(), ready.end(), [](const Entry* a, const Entry* b) { return a->rank < b->rank; });
    for (Entry* e : ready) {
      if (stopped_) break;
      e->handler();
    }
  }
  return {};
}

}  // namespace reclaimd::controller

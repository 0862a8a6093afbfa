#include "psi/Watch.h"

#include <sys/epoll.h>

#include "psi/Pressure.h"

namespace reclaimd::psi {

Source Source::open(int dirFd, const std::string& name, const TriggerSpec& spec) {
  auto totals = KeptFile::open(dirFd, name);
  if (!totals) {
    Error why = totals.error();
    return Source(std::move(totals), std::move(why));
  }
  auto trigger = Trigger::open(dirFd, name, spec);
  if (!trigger) return Source(std::move(totals), trigger.error());
  return Source(std::move(totals), trigger->release());  // closing the fd removes the trigger
}

Source Source::failed(Error why) {
  return Source(why, why);
}

void Source::dropTrigger(Error why) {
  trigger_ = std::move(why);
}

Result<void> Source::readable() const {
  if (!totals_) return totals_.error();
  return {};
}

Result<int> Source::trigger() const {
  if (!trigger_) return trigger_.error();
  return trigger_->get();
}

Result<std::uint64_t> Source::someTotal() {
  if (!totals_) return totals_.error();
  auto text = totals_->read();
  if (!text) return text.error();
  auto parsed = parsePressure(*text);
  if (!parsed) return parsed.error();
  return parsed->some.totalUsec;
}

Watch::Watch() : epoll_(::epoll_create1(EPOLL_CLOEXEC)) {}

Result<void> Watch::add(const Source& source, std::uint32_t id) {
  if (!epoll_) return errnoError(EBADF, "pressure epoll");
  auto fd = source.trigger();
  if (!fd) return fd.error();
  epoll_event ev{};
  // A PSI trigger signals with EPOLLPRI only (its poll always reports EPOLLIN|EPOLLOUT too, so
  // EPOLLIN must never be asked of it).
  ev.events = EPOLLPRI;
  // The id and the fd travel together, so nothing has to be looked up or kept here; a source's
  // fd closing removes it from the set.
  ev.data.u64 = (static_cast<std::uint64_t>(id & 0x7fffffffU) << 32) | static_cast<std::uint32_t>(*fd);
  if (::epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, *fd, &ev) != 0) return errnoError(errno, "watch for pressure events");
  return {};
}

std::vector<WatchEvent> Watch::take() {
  std::vector<WatchEvent> out;
  epoll_event events[16];
  for (;;) {
    const int n = ::epoll_wait(epoll_.get(), events, 16, 0);
    if (n <= 0) break;
    for (int i = 0; i < n; ++i) {
      const std::uint64_t data = events[i].data.u64;
      const auto id = static_cast<std::uint32_t>((data >> 32) & 0x7fffffffU);
      const int fd = static_cast<int>(static_cast<std::uint32_t>(data));
      const bool gone = (events[i].events & (EPOLLERR | EPOLLHUP)) != 0;
      if (!gone && !(events[i].events & EPOLLPRI)) continue;  // not an event
      // A removed cgroup's trigger keeps reporting until its fd is closed: stop watching it
      // (ENOENT if already gone from the set is fine: the fd is being dropped either way).
      if (gone) (void)::epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, fd, nullptr);
      out.push_back(WatchEvent{id, gone});
    }
    if (n < 16) break;
  }
  return out;
}

}  // namespace reclaimd::psi

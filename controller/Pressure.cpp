#include "controller/Pressure.h"

#include <sys/epoll.h>
#include <unistd.h>

#include "psi/Pressure.h"

namespace reclaimd::controller {

BackoffConfig backoffConfigOf(const policies::PressureSettings& s) {
  // Halving stops at 1/64 of a step; min_step then bounds the bytes (Gradual.cpp).
  return BackoffConfig{s.calm, 1.0 / 64};
}

PressureScope::PressureScope(std::string label, const policies::PressureSettings& settings)
    : label_(std::move(label)),
      spec_{std::chrono::microseconds(settings.stall), std::chrono::microseconds(settings.window)},
      meter_(settings.window + std::chrono::seconds(1)),
      backoff_(backoffConfigOf(settings)) {}

void PressureScope::open(int dirFd, const std::string& file) {
  auto totals = KeptFile::open(dirFd, file);
  if (!totals) {
    why_ = totals.error().message();
    return;
  }
  totals_ = std::move(*totals);
  auto trigger = psi::Trigger::open(dirFd, file, spec_);
  if (!trigger) {
    why_ = trigger.error().message();
    return;
  }
  events_ = trigger->release();  // closing it removes the trigger
  eventfd_ = false;
}

void PressureScope::useEventSource(UniqueFd fd) {
  events_ = std::move(fd);
  eventfd_ = true;
}

void PressureScope::dropEventSource(std::string why) {
  events_.reset();
  why_ = std::move(why);
}

bool PressureScope::sample(TimePoint now, std::chrono::microseconds own) {
  if (!totals_) return false;
  auto text = totals_->read();
  if (!text) return false;
  auto parsed = psi::parsePressure(*text);
  if (!parsed) return false;
  // Our own stall can overlap others' (then "some" counted it once): subtracting it can hide a
  // little of theirs, never invent any.
  const auto ownUs = static_cast<std::uint64_t>(own.count());
  meter_.add(now, parsed->some.totalUsec > ownUs ? parsed->some.totalUsec - ownUs : 0);
  lastStall_ = meter_.stallOver(spec_.window);
  return lastStall_ >= spec_.stall;
}

PressureWatch::PressureWatch() : epoll_(::epoll_create1(EPOLL_CLOEXEC)) {}

Result<void> PressureWatch::add(const PressureScope& scope, std::uint32_t id) {
  if (!epoll_) return errnoError(EBADF, "pressure epoll");
  epoll_event ev{};
  ev.events = scope.eventIsEventfd() ? EPOLLIN : EPOLLPRI;
  // The id, the fd and its kind travel together (bit 31 of the id half marks an eventfd), so
  // nothing has to be looked up or kept here; a scope's fd closing removes it from the set.
  const std::uint64_t kind = scope.eventIsEventfd() ? (1ULL << 63) : 0;
  ev.data.u64 =
      kind | (static_cast<std::uint64_t>(id & 0x7fffffffU) << 32) | static_cast<std::uint32_t>(scope.eventFd());
  if (::epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, scope.eventFd(), &ev) != 0) {
    return errnoError(errno, "watch " + scope.label() + " for pressure events");
  }
  return {};
}

std::vector<WatchEvent> PressureWatch::take() {
  std::vector<WatchEvent> out;
  epoll_event events[16];
  for (;;) {
    const int n = ::epoll_wait(epoll_.get(), events, 16, 0);
    if (n <= 0) break;
    for (int i = 0; i < n; ++i) {
      const std::uint64_t data = events[i].data.u64;
      const auto id = static_cast<std::uint32_t>((data >> 32) & 0x7fffffffU);
      const int fd = static_cast<int>(static_cast<std::uint32_t>(data));
      const bool isEventfd = (data >> 63) != 0;
      const bool gone = (events[i].events & (EPOLLERR | EPOLLHUP)) != 0;
      if (isEventfd && (events[i].events & EPOLLIN)) {
        std::uint64_t count = 0;
        [[maybe_unused]] ssize_t r = ::read(fd, &count, sizeof count);
      } else if (!gone && !(events[i].events & EPOLLPRI)) {
        continue;  // not an event
      }
      // A removed cgroup's trigger keeps reporting until its fd is closed: stop watching it.
      if (gone) ::epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, fd, nullptr);
      out.push_back(WatchEvent{id, gone});
    }
    if (n < 16) break;
  }
  return out;
}

}  // namespace reclaimd::controller

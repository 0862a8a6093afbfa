// The floor under any 1 Hz sampler: wake on an absolute timerfd deadline through epoll, read
// /proc/stat and the memory pressure file, read the process CPU clock, re-arm. waitcost.py runs
// it beside reclaimd so the figure for reclaimd's waiting can be read against what a loop that
// does nothing else costs on the same machine at the same moment (a VM's wakeups are dear).
#include <fcntl.h>
#include <sys/epoll.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <ctime>

int main() {
  const int timer = ::timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
  const int ep = ::epoll_create1(EPOLL_CLOEXEC);
  const int stat = ::open("/proc/stat", O_RDONLY | O_CLOEXEC);
  const int pressure = ::open("/proc/pressure/memory", O_RDONLY | O_CLOEXEC);  // -1 without PSI: fine
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = timer;
  if (timer < 0 || ep < 0 || stat < 0 || ::epoll_ctl(ep, EPOLL_CTL_ADD, timer, &ev) != 0) {
    std::perror("wake_baseline");
    return 1;
  }
  timespec next{};
  ::clock_gettime(CLOCK_MONOTONIC, &next);
  char buf[8192];
  for (;;) {
    next.tv_sec += 1;
    itimerspec spec{};
    spec.it_value = next;
    ::timerfd_settime(timer, TFD_TIMER_ABSTIME, &spec, nullptr);
    epoll_event out{};
    if (::epoll_wait(ep, &out, 1, -1) < 0) continue;
    std::uint64_t expirations = 0;
    while (::read(timer, &expirations, sizeof expirations) == static_cast<ssize_t>(sizeof expirations)) {
    }
    (void)!::pread(stat, buf, sizeof buf, 0);
    timespec cpu{};
    ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &cpu);
    if (pressure >= 0) (void)!::pread(pressure, buf, sizeof buf, 0);
  }
}

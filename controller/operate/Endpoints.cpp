#include "controller/operate/Endpoints.h"

#include <fcntl.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <utility>

#include "base/Event.h"
#include "base/Log.h"
#include "controller/ExitCodes.h"
#include "controller/operate/MetricsFile.h"

namespace reclaimd::controller {

using namespace std::chrono_literals;

namespace {

// Status clients are root's own commands, one at a time; HTTP clients are scrapers (one or two
// Prometheus servers) and whatever else a local user opens. Separate budgets: no number of
// HTTP clients takes a status slot.
constexpr std::size_t kMaxStatusConnections = 4;
constexpr std::size_t kMaxHttpConnections = 16;
constexpr std::size_t kMaxRequest = 8192;
// Connections taken per wakeup of a listener: the rest wait in the backlog (the listener stays
// ready, so the loop comes back to them) while a SIGTERM, a turn or a pressure event is served
// in between. A scrape and `reclaimd status` are one connection each.
constexpr int kMaxAcceptsPerWakeup = 4;
constexpr auto kRefusedLogPeriod = 10s;
constexpr auto kMetricsFilePeriod = 10s;  // node_exporter scrapes every 15 s by default
// A metrics file that cannot be written mostly stays so (its directory removed, the disk full):
// said once a minute with a count, not at every write.
constexpr auto kMetricsFailedLogPeriod = 60s;

void add(int epollFd, int fd, std::uint32_t events) {
  epoll_event ev{};
  ev.events = events;
  ev.data.fd = fd;
  ::epoll_ctl(epollFd, EPOLL_CTL_ADD, fd, &ev);
}

}  // namespace

int endpointsExitCode(const Error& error) {
  if (error.code == std::errc::address_in_use) return kExitRunning;
  if (error.code == std::errc::not_a_socket) return kExitCantCreate;
  return kExitFailure;
}

Endpoints::~Endpoints() {
  [[maybe_unused]] auto ignored = finish();
}

void Endpoints::stop() {
  if (auto ok = finish(); !ok) {
    emit(Event(Severity::Warn, "metrics_file_failed")
             .add("path", options_.metricsFile)
             .add("error", ok.error().message()));
  }
}

Result<void> Endpoints::finish() {
  if (stopped_) return {};
  stopped_ = true;
  struct stat st {};
  // Only our own socket: never one that replaced it since.
  if (statusListen_ && ::lstat(options_.statusSocket.c_str(), &st) == 0 && st.st_ino == statusInode_) {
    // A socket left behind answers nobody, and the next start takes its path (checkStatusSocket):
    // a failed unlink is ignored.
    (void)::unlink(options_.statusSocket.c_str());
  }
  if (!metricsWritten_ || options_.metricsFile.empty()) return {};
  auto ok = writeFileAtomically(options_.metricsFile, markStopped(lastMetrics_));
  if (!ok && ::unlink(options_.metricsFile.c_str()) == 0) {
    return Error{ok.error().code, ok.error().context + " (the old file was removed: it said reclaimd_up 1)"};
  }
  return ok;
}

Result<void> Endpoints::open(const EndpointOptions& options) {
  options_ = options;
  conns_.reset(::epoll_create1(EPOLL_CLOEXEC));
  if (!conns_) return errnoError(errno, "epoll_create1");
  timer_.reset(::timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC));
  if (!timer_) return errnoError(errno, "timerfd_create");
  // Held for accept() at the fd limit (see accept()); only listeners need it.
  if (!options.statusSocket.empty() || !options.metricsListen.empty()) {
    spare_.reset(::open("/dev/null", O_RDONLY | O_CLOEXEC));
    if (!spare_) return errnoError(errno, "open /dev/null");
  }
  if (!options.statusSocket.empty()) {
    statusWatch_.reset(::epoll_create1(EPOLL_CLOEXEC));
    if (!statusWatch_) return errnoError(errno, "epoll_create1");
    if (auto bound = bindStatusSocket(); !bound) return bound;
  }
  if (!options.metricsListen.empty()) {
    auto address = parseLoopback(options.metricsListen);
    if (!address) return address.error();
    httpListen_.reset(::socket(address->addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    if (!httpListen_) return errnoError(errno, "socket");
    const int one = 1;
    // Without it a restart's bind may wait out TIME_WAIT, and bind says so: ignoring its failure.
    (void)::setsockopt(httpListen_.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (::bind(httpListen_.get(), reinterpret_cast<sockaddr*>(&address->addr), address->length) != 0 ||
        ::listen(httpListen_.get(), 16) != 0) {
      return errnoError(errno, "listen on " + options.metricsListen);
    }
  }
  return {};
}

void Endpoints::setRenderers(Render status, Render metrics) {
  status_ = std::move(status);
  metrics_ = std::move(metrics);
}

std::vector<int> Endpoints::fds() const {
  std::vector<int> out;
  for (const UniqueFd* fd : {&statusWatch_, &httpListen_, &conns_, &timer_}) {
    if (*fd) out.push_back(fd->get());
  }
  return out;
}

void Endpoints::handle(int fd, TimePoint now) {
  if (statusWatch_ && fd == statusWatch_.get()) {
    accept(statusListen_.get(), false, now);
  } else if (httpListen_ && fd == httpListen_.get()) {
    accept(fd, true, now);
  } else if (fd == conns_.get()) {
    onConnections();
  } else if (fd == timer_.get()) {
    std::uint64_t expirations = 0;
    [[maybe_unused]] auto r = ::read(fd, &expirations, sizeof expirations);
  }
  expire(now);
  arm(now);
}

void Endpoints::newTurn() {
  statusCache_.reset();
  metricsCache_.reset();
}

const std::string& Endpoints::rendered(const Render& render, std::optional<std::string>& cache) {
  if (!cache) cache = render ? render() : std::string();
  return *cache;
}

void Endpoints::accept(int listenFd, bool http, TimePoint now) {
  for (int taken = 0; taken < kMaxAcceptsPerWakeup; ++taken) {
    UniqueFd fd(::accept4(listenFd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC));
    if (!fd && (errno == EMFILE || errno == ENFILE) && spare_) {
      // Out of fds the connection stays queued and the listener readable: the loop would wake
      // for it at once, again and again. The spare fd makes room to take it and hang up.
      const int err = errno;
      spare_.reset();
      UniqueFd dropped(::accept4(listenFd, nullptr, nullptr, SOCK_CLOEXEC));
      const bool hungUp = static_cast<bool>(dropped);
      dropped.reset();  // before the spare is opened again, in the slot it frees
      spare_.reset(::open("/dev/null", O_RDONLY | O_CLOEXEC));
      if (!hungUp) return;
      if (auto n = dropped_.count(now, kRefusedLogPeriod))
        emit(Event(Severity::Warn, "connection_dropped").add("error", std::strerror(err)).add("dropped", *n));
      continue;
    }
    // EAGAIN: no one else waits. Any other error (a client that gave up) is the client's loss,
    // not the daemon's: the batch ends and the next wakeup accepts again, ignoring it.
    if (!fd) return;
    if (!admit(fd.get(), http, now)) continue;
    Connection c;
    c.http = http;
    c.since = now;
    c.fd = std::move(fd);
    const int raw = c.fd.get();
    Connection& added = connections_.emplace(raw, std::move(c)).first->second;
    if (http) {
      add(conns_.get(), raw, EPOLLIN);
      onReadable(added);  // the request usually came with the connection
    } else {
      add(conns_.get(), raw, EPOLLOUT);
      // No request: connecting asks for the status.
      respond(added, rendered(status_, statusCache_));
    }
  }
}

// Whether a new connection gets a slot: a status peer must be root (or our own user); a full
// budget drops its oldest connection, so holding connections open never locks others out.
bool Endpoints::admit(int fd, bool http, TimePoint now) {
  if (!http) {
    ucred cred{};
    socklen_t len = sizeof cred;
    if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 || (cred.uid != 0 && cred.uid != ::geteuid())) {
      refused(cred.uid, cred.pid, now);
      return false;
    }
  }
  const std::size_t budget = http ? kMaxHttpConnections : kMaxStatusConnections;
  std::size_t used = 0;
  auto oldest = connections_.end();
  for (auto it = connections_.begin(); it != connections_.end(); ++it) {
    if (it->second.http != http) continue;
    ++used;
    if (oldest == connections_.end() || it->second.since < oldest->second.since) oldest = it;
  }
  if (used >= budget && oldest != connections_.end()) close(oldest->first);
  return true;
}

// One line per kRefusedLogPeriod at most, with how many were refused since the last: whoever can
// reach the socket can connect in a loop, and must not fill the journal.
void Endpoints::refused(uid_t uid, pid_t pid, TimePoint now) {
  if (auto n = refused_.count(now, kRefusedLogPeriod))
    emit(Event(Severity::Warn, "status_refused").add("uid", uid).add("pid", pid).add("refused", *n));
}

std::optional<std::uint64_t> Endpoints::Tally::count(TimePoint now, std::chrono::nanoseconds period) {
  ++unsaid;
  if (said && now - *said < period) return std::nullopt;
  said = now;
  return std::exchange(unsaid, 0);
}

void Endpoints::onConnections() {
  epoll_event events[16];
  const int n = ::epoll_wait(conns_.get(), events, 16, 0);
  for (int i = 0; i < n; ++i) {
    auto it = connections_.find(events[i].data.fd);
    if (it == connections_.end()) continue;
    if (events[i].events & EPOLLERR) {
      close(it->first);
    } else if (events[i].events & EPOLLOUT) {
      flush(it->second);
    } else if (events[i].events & (EPOLLIN | EPOLLHUP)) {
      onReadable(it->second);
    }
  }
}

void Endpoints::onReadable(Connection& c) {
  char buf[2048];
  bool ended = false;  // the client shut its side: what it sent is all there will be
  for (;;) {
    const ssize_t n = ::read(c.fd.get(), buf, sizeof buf);
    if (n > 0) {
      c.in.append(buf, static_cast<std::size_t>(n));
      if (c.in.size() > kMaxRequest) return close(c.fd.get());
      continue;
    }
    ended = n == 0;
    break;  // EAGAIN: what there is, is read
  }
  if (!c.out.empty()) return;
  auto request = parseHttpRequest(c.in);
  if (!request) return respond(c, httpBadRequest());
  if (!*request) {
    if (ended) close(c.fd.get());  // gone before asking anything
    return;                        // else wait for the whole header block
  }
  const HttpRequest& r = **request;
  respond(c, httpResponse(r, wantsMetrics(r) ? rendered(metrics_, metricsCache_) : std::string()));
}

void Endpoints::respond(Connection& c, std::string out) {
  c.out = std::move(out);
  epoll_event ev{};
  ev.events = EPOLLOUT;
  ev.data.fd = c.fd.get();
  ::epoll_ctl(conns_.get(), EPOLL_CTL_MOD, c.fd.get(), &ev);
  flush(c);
}

void Endpoints::flush(Connection& c) {
  while (c.sent < c.out.size()) {
    const ssize_t n = ::send(c.fd.get(), c.out.data() + c.sent, c.out.size() - c.sent, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0) {
      if (errno == EAGAIN) return;  // EPOLLOUT brings us back
      return close(c.fd.get());
    }
    c.sent += static_cast<std::size_t>(n);
  }
  close(c.fd.get());
}

void Endpoints::close(int fd) {
  ::epoll_ctl(conns_.get(), EPOLL_CTL_DEL, fd, nullptr);
  connections_.erase(fd);  // its UniqueFd closes it
}

void Endpoints::expire(TimePoint now) {
  for (auto it = connections_.begin(); it != connections_.end();) {
    if (now - it->second.since < options_.clientTimeout) {
      ++it;
      continue;
    }
    ::epoll_ctl(conns_.get(), EPOLL_CTL_DEL, it->first, nullptr);
    it = connections_.erase(it);
  }
}

// The timer fires at the first connection's deadline (disarmed when there is none): idle
// clients are closed on time, not only when another client arrives.
void Endpoints::arm(TimePoint now) {
  if (!timer_) return;
  itimerspec spec{};
  if (!connections_.empty()) {
    TimePoint first = TimePoint::max();
    for (const auto& [fd, c] : connections_)
      first = std::min(first, c.since + options_.clientTimeout);
    const auto wait = std::max<std::chrono::nanoseconds>(first - now, 1ms);
    spec.it_value.tv_sec = static_cast<time_t>(wait.count() / 1'000'000'000);
    spec.it_value.tv_nsec = static_cast<long>(wait.count() % 1'000'000'000);
  }
  ::timerfd_settime(timer_.get(), 0, &spec, nullptr);
}

void Endpoints::writeMetricsFile(const Render& metrics, TimePoint now, bool force) {
  if (options_.metricsFile.empty()) return;
  if (!force && metricsWritten_ && now - lastMetricsWrite_ < kMetricsFilePeriod) return;
  lastMetricsWrite_ = now;
  metricsWritten_ = true;
  lastMetrics_ = metrics();
  if (auto ok = writeFileAtomically(options_.metricsFile, lastMetrics_); !ok) {
    ++metricsFailures_;
    if (auto n = metricsFailed_.count(now, kMetricsFailedLogPeriod)) {
      emit(Event(Severity::Warn, "metrics_file_failed")
               .add("path", options_.metricsFile)
               .add("error", ok.error().message())
               .add("failed", *n));
    }
    return;
  }
  if (metricsFailures_ == 0) return;
  const std::uint64_t failed = std::exchange(metricsFailures_, 0);
  emit(Event(Severity::Info, "metrics_file_restored").add("path", options_.metricsFile).add("failed", failed));
  metricsFailed_ = {};  // the next outage is said at its first failure
}

}  // namespace reclaimd::controller

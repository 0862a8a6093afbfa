#include "controller/Endpoints.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <spdlog/spdlog.h>
#include <sys/epoll.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "base/Units.h"

namespace reclaimd::controller {

using namespace std::chrono_literals;

namespace {

constexpr std::size_t kMaxConnections = 16;  // a status client or a scraper at a time, with room
constexpr std::size_t kMaxRequest = 8192;
constexpr auto kClientTimeout = 5s;       // the readiness probe's timeout
constexpr auto kMetricsFilePeriod = 10s;  // node_exporter scrapes every 15 s by default

void add(int epollFd, int fd, std::uint32_t events) {
  epoll_event ev{};
  ev.events = events;
  ev.data.fd = fd;
  ::epoll_ctl(epollFd, EPOLL_CTL_ADD, fd, &ev);
}

}  // namespace

Result<LoopbackAddress> parseLoopback(std::string_view text) {
  const std::size_t colon = text.rfind(':');
  if (colon == std::string_view::npos)
    return invalidError("--metrics-listen " + std::string(text) + ": expected HOST:PORT");
  std::string host(text.substr(0, colon));
  auto port = parseU64(text.substr(colon + 1));
  if (!port || *port == 0 || *port > 65535) return invalidError("--metrics-listen " + std::string(text) + ": bad port");
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  if (host == "localhost") host = "127.0.0.1";
  LoopbackAddress out;
  sockaddr_in v4{};
  sockaddr_in6 v6{};
  if (::inet_pton(AF_INET, host.c_str(), &v4.sin_addr) == 1) {
    if ((ntohl(v4.sin_addr.s_addr) >> 24) != 127) {
      return invalidError("--metrics-listen " + std::string(text) + ": only loopback addresses (127.0.0.0/8, ::1)");
    }
    v4.sin_family = AF_INET;
    v4.sin_port = htons(static_cast<std::uint16_t>(*port));
    std::memcpy(&out.addr, &v4, sizeof v4);
    out.length = sizeof v4;
  } else if (::inet_pton(AF_INET6, host.c_str(), &v6.sin6_addr) == 1) {
    if (!IN6_IS_ADDR_LOOPBACK(&v6.sin6_addr)) {
      return invalidError("--metrics-listen " + std::string(text) + ": only loopback addresses (127.0.0.0/8, ::1)");
    }
    v6.sin6_family = AF_INET6;
    v6.sin6_port = htons(static_cast<std::uint16_t>(*port));
    std::memcpy(&out.addr, &v6, sizeof v6);
    out.length = sizeof v6;
  } else {
    return invalidError("--metrics-listen " + std::string(text) + ": not an IP address");
  }
  return out;
}

Endpoints::~Endpoints() {
  if (statusListen_ && !options_.statusSocket.empty()) ::unlink(options_.statusSocket.c_str());
}

Result<void> Endpoints::open(const EndpointOptions& options) {
  options_ = options;
  epoll_.reset(::epoll_create1(EPOLL_CLOEXEC));
  if (!epoll_) return errnoError(errno, "epoll_create1");
  if (!options.statusSocket.empty()) {
    const std::string& path = options.statusSocket;
    sockaddr_un addr{};
    if (path.size() >= sizeof addr.sun_path) return invalidError("--status-socket " + path + ": path too long");
    // The directory is made if missing (without systemd's RuntimeDirectory=); a stale socket
    // from a previous run (a restarted container keeps its emptyDir) is replaced.
    const std::size_t slash = path.rfind('/');
    if (slash != std::string::npos && slash > 0) ::mkdir(path.substr(0, slash).c_str(), 0755);
    ::unlink(path.c_str());
    statusListen_.reset(::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    if (!statusListen_) return errnoError(errno, "socket");
    addr.sun_family = AF_UNIX;
    std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
    // Root only: the socket is made with mode 0600 (umask during bind), and peers are checked.
    const mode_t old = ::umask(0177);
    const int bound = ::bind(statusListen_.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr);
    ::umask(old);
    if (bound != 0 || ::listen(statusListen_.get(), 8) != 0) return errnoError(errno, "bind " + path);
    add(epoll_.get(), statusListen_.get(), EPOLLIN);
  }
  if (!options.metricsListen.empty()) {
    auto address = parseLoopback(options.metricsListen);
    if (!address) return address.error();
    httpListen_.reset(::socket(address->addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    if (!httpListen_) return errnoError(errno, "socket");
    const int one = 1;
    ::setsockopt(httpListen_.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (::bind(httpListen_.get(), reinterpret_cast<sockaddr*>(&address->addr), address->length) != 0 ||
        ::listen(httpListen_.get(), 8) != 0) {
      return errnoError(errno, "listen on " + options.metricsListen);
    }
    add(epoll_.get(), httpListen_.get(), EPOLLIN);
  }
  return {};
}

void Endpoints::serve(const Render& status, const Render& metrics, TimePoint now) {
  epoll_event events[16];
  const int n = ::epoll_wait(epoll_.get(), events, 16, 0);
  for (int i = 0; i < n; ++i) {
    const int fd = events[i].data.fd;
    if (statusListen_ && fd == statusListen_.get()) {
      accept(fd, false, status, now);
    } else if (httpListen_ && fd == httpListen_.get()) {
      accept(fd, true, status, now);
    } else if (events[i].events & (EPOLLERR | EPOLLHUP)) {
      close(fd);
    } else if (events[i].events & EPOLLOUT) {
      auto it = connections_.find(fd);
      if (it != connections_.end()) flush(it->second);
    } else {
      onConnection(fd, metrics);
    }
  }
  expire(now);
}

void Endpoints::accept(int listenFd, bool http, const Render& status, TimePoint now) {
  for (;;) {
    const int fd = ::accept4(listenFd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) return;
    UniqueFd conn(fd);
    if (connections_.size() >= kMaxConnections) continue;  // closed: try again later
    Connection c;
    c.http = http;
    c.since = now;
    if (!http) {
      ucred cred{};
      socklen_t len = sizeof cred;
      if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 || (cred.uid != 0 && cred.uid != ::geteuid())) {
        spdlog::warn("event=status_refused uid={} pid={}", cred.uid, cred.pid);
        continue;
      }
      c.out = status();  // no request: connecting asks for the status
    }
    c.fd = std::move(conn);
    auto [it, inserted] = connections_.emplace(fd, std::move(c));
    add(epoll_.get(), fd, http ? EPOLLIN : EPOLLOUT);
    if (!http) flush(it->second);
  }
}

void Endpoints::onConnection(int fd, const Render& metrics) {
  auto it = connections_.find(fd);
  if (it == connections_.end()) return;
  Connection& c = it->second;
  char buf[2048];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n > 0) {
      c.in.append(buf, static_cast<std::size_t>(n));
      if (c.in.size() > kMaxRequest) return close(fd);
      continue;
    }
    if (n == 0) return close(fd);
    break;  // EAGAIN: what there is, is read
  }
  if (!c.out.empty() || c.in.find("\r\n\r\n") == std::string::npos) return;  // wait for the whole request
  const bool wantsMetrics = c.in.rfind("GET /metrics ", 0) == 0 || c.in.rfind("GET /metrics?", 0) == 0;
  const bool get = c.in.rfind("GET ", 0) == 0;
  std::string body, head;
  if (wantsMetrics) {
    body = metrics();
    head = "HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\n";
  } else if (get) {
    body = "reclaimd: metrics at /metrics\n";
    head = "HTTP/1.1 404 Not Found\r\nContent-Type: text/plain\r\n";
  } else {
    body = "only GET\n";
    head = "HTTP/1.1 405 Method Not Allowed\r\nContent-Type: text/plain\r\n";
  }
  c.out = head + "Content-Length: " + std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" + body;
  epoll_event ev{};
  ev.events = EPOLLOUT;
  ev.data.fd = fd;
  ::epoll_ctl(epoll_.get(), EPOLL_CTL_MOD, fd, &ev);
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
  ::epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, fd, nullptr);
  connections_.erase(fd);  // its UniqueFd closes it
}

void Endpoints::expire(TimePoint now) {
  for (auto it = connections_.begin(); it != connections_.end();) {
    if (now - it->second.since < kClientTimeout) {
      ++it;
      continue;
    }
    ::epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, it->first, nullptr);
    it = connections_.erase(it);
  }
}

void Endpoints::writeMetricsFile(const Render& metrics, TimePoint now, bool force) {
  if (options_.metricsFile.empty()) return;
  if (!force && metricsWritten_ && now - lastMetricsWrite_ < kMetricsFilePeriod) return;
  lastMetricsWrite_ = now;
  metricsWritten_ = true;
  // Written beside the target and renamed over it: a scraper never reads half a file. Mode
  // 0644 whatever the umask: node_exporter runs as its own user.
  const std::string tmp = options_.metricsFile + ".tmp";
  const std::string text = metrics();
  UniqueFd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  if (!fd || ::fchmod(fd.get(), 0644) != 0 ||
      ::write(fd.get(), text.data(), text.size()) != static_cast<ssize_t>(text.size()) ||
      ::rename(tmp.c_str(), options_.metricsFile.c_str()) != 0) {
    spdlog::warn("event=metrics_file_failed path={} error=\"{}\"", options_.metricsFile, std::strerror(errno));
    ::unlink(tmp.c_str());
  }
}

}  // namespace reclaimd::controller

// The status socket: taking its path at start and keeping it while the daemon runs (Endpoints.h).
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "base/Event.h"
#include "base/Log.h"
#include "controller/operate/Endpoints.h"

namespace reclaimd::controller {

using namespace std::chrono_literals;

namespace {

// An lstat a check: `reclaimd status` finds its socket again within seconds of a cleaner's pass.
constexpr auto kStatusSocketCheckPeriod = 10s;

Result<sockaddr_un> unixAddress(const std::string& path) {
  sockaddr_un addr{};
  if (path.size() >= sizeof addr.sun_path) return invalidError("--status-socket " + path + ": path too long");
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  return addr;
}

}  // namespace

Result<void> checkStatusSocket(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return {};
    return errnoError(errno, "--status-socket " + path);
  }
  if (!S_ISSOCK(st.st_mode)) {
    return errnoError(ENOTSOCK, "--status-socket " + path + " exists and is not a socket; refusing to replace it");
  }
  auto addr = unixAddress(path);
  if (!addr) return addr.error();
  UniqueFd probe(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!probe) return errnoError(errno, "socket");
  // A listener answers connect() at once (EAGAIN when its backlog is full: it is alive too);
  // ECONNREFUSED means nobody listens: the socket is a previous run's, and is replaced.
  if (::connect(probe.get(), reinterpret_cast<const sockaddr*>(&*addr), sizeof *addr) == 0 || errno == EAGAIN) {
    return errnoError(EADDRINUSE, "--status-socket " + path + ": another reclaimd answers there");
  }
  return {};
}

void Endpoints::keepStatusSocket(TimePoint now) {
  if (!statusListen_ || stopped_) return;
  if (statusChecked_ && now - *statusChecked_ < kStatusSocketCheckPeriod) return;
  statusChecked_ = now;
  const std::string& path = options_.statusSocket;
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0 && st.st_ino == statusInode_) return;
  if (auto bound = bindStatusSocket(); !bound) {
    if (!std::exchange(statusLost_, true))
      emit(Event(Severity::Warn, "status_socket_lost").add("path", path).add("error", bound.error().message()));
    return;
  }
  statusLost_ = false;
  emit(Event(Severity::Warn, "status_socket_restored").add("path", path));
}

// A listener at the status socket's path, in place of any before it: the path is taken only where
// it is free or holds a stale socket (checkStatusSocket).
Result<void> Endpoints::bindStatusSocket() {
  const std::string& path = options_.statusSocket;
  auto addr = unixAddress(path);
  if (!addr) return addr.error();
  // The directory is made if missing (without systemd's RuntimeDirectory=, or removed with it), root only
  // as the unit's RuntimeDirectoryMode= makes it. One that exists is someone else's and is left as it is.
  const std::size_t slash = path.rfind('/');
  // EEXIST is the usual answer; any other failure shows in bind's error, so it is ignored here.
  if (slash != std::string::npos && slash > 0) (void)::mkdir(path.substr(0, slash).c_str(), 0700);
  if (auto free = checkStatusSocket(path); !free) return free;
  // A stale socket (checked just above); one that cannot be removed fails bind with EADDRINUSE.
  (void)::unlink(path.c_str());
  UniqueFd listener(::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!listener) return errnoError(errno, "socket");
  // Root only: the socket is made with mode 0600 (umask during bind), and peers are checked.
  const mode_t old = ::umask(0177);
  const int bound = ::bind(listener.get(), reinterpret_cast<const sockaddr*>(&*addr), sizeof *addr);
  ::umask(old);
  if (bound != 0 || ::listen(listener.get(), 8) != 0) return errnoError(errno, "bind " + path);
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = listener.get();
  if (::epoll_ctl(statusWatch_.get(), EPOLL_CTL_ADD, listener.get(), &ev) != 0)
    return errnoError(errno, "epoll_ctl " + path);
  struct stat st {};
  // Without the inode, finish() leaves the socket (the next start takes its path): ignoring.
  statusInode_ = ::lstat(path.c_str(), &st) == 0 ? st.st_ino : 0;
  statusListen_ = std::move(listener);  // closing the old one takes it out of statusWatch_
  return {};
}

}  // namespace reclaimd::controller

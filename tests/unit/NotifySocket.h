// systemd's side of sd_notify: a datagram socket the daemon sends READY, WATCHDOG, STATUS... to.
#pragma once

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <string>

namespace reclaimd::testing {

class NotifySocket {
 public:
  explicit NotifySocket(const std::string& path) : path_(path) {
    fd_ = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::strncpy(a.sun_path, path.c_str(), sizeof a.sun_path - 1);
    bound_ = fd_ >= 0 && ::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  }
  ~NotifySocket() { ::close(fd_); }
  NotifySocket(const NotifySocket&) = delete;
  NotifySocket& operator=(const NotifySocket&) = delete;

  bool bound() const { return bound_; }
  const std::string& path() const { return path_; }
  std::string env() const { return "NOTIFY_SOCKET=" + path_; }
  // Everything received so far, one message a line.
  const std::string& drain() {
    char buf[4096];
    ssize_t n;
    while ((n = ::recv(fd_, buf, sizeof buf, 0)) > 0)
      received_ += std::string(buf, static_cast<std::size_t>(n)) + "\n";
    return received_;
  }
  std::size_t count(const std::string& what) {
    drain();
    std::size_t n = 0;
    for (std::size_t p = received_.find(what); p != std::string::npos; p = received_.find(what, p + 1))
      ++n;
    return n;
  }

 private:
  std::string path_;
  int fd_ = -1;
  bool bound_ = false;
  std::string received_;
};

}  // namespace reclaimd::testing

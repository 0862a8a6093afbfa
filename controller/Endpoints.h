// How the running daemon is asked what it is doing: a unix socket for `reclaimd status`
// (root only), Prometheus metrics in a node_exporter textfile written atomically, and an
// optional HTTP endpoint bound to loopback only. All non-blocking, served from the daemon's
// one thread through a nested epoll fd (as PressureWatch is).
#pragma once

#include <sys/socket.h>

#include <chrono>
#include <functional>
#include <map>
#include <string>
#include <string_view>

#include "base/Clock.h"
#include "base/Result.h"
#include "base/UniqueFd.h"

namespace reclaimd::controller {

inline constexpr const char* kDefaultStatusSocket = "/run/reclaimd/status.sock";

struct EndpointOptions {
  std::string statusSocket = kDefaultStatusSocket;  // empty: none
  std::string metricsFile;                          // empty: none
  std::string metricsListen;                        // empty: none; else a loopback host:port
};

struct LoopbackAddress {
  sockaddr_storage addr{};
  socklen_t length = 0;
};

// "127.0.0.1:9101", "[::1]:9101" or "localhost:9101". Anything that is not loopback is an
// error: the metrics endpoint never listens where other machines can reach it.
Result<LoopbackAddress> parseLoopback(std::string_view text);

class Endpoints {
 public:
  using Render = std::function<std::string()>;

  // Binds what the options ask for. Errors: bind/listen errnos with the path or address.
  Result<void> open(const EndpointOptions& options);
  ~Endpoints();

  int fd() const { return epoll_.get(); }  // readable when a client waits
  // Accepts, reads requests and writes answers for whatever is ready; never blocks.
  void serve(const Render& status, const Render& metrics, TimePoint now);
  // Writes the metrics file when `period` has passed since the last write (or `force`).
  void writeMetricsFile(const Render& metrics, TimePoint now, bool force = false);

 private:
  struct Connection {
    UniqueFd fd;
    bool http = false;
    std::string in, out;
    std::size_t sent = 0;
    TimePoint since{};
  };
  void accept(int listenFd, bool http, const Render& status, TimePoint now);
  void onConnection(int fd, const Render& metrics);
  void flush(Connection& c);
  void close(int fd);
  void expire(TimePoint now);

  EndpointOptions options_;
  UniqueFd epoll_, statusListen_, httpListen_;
  std::map<int, Connection> connections_;
  TimePoint lastMetricsWrite_{};
  bool metricsWritten_ = false;
};

}  // namespace reclaimd::controller

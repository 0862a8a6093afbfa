// How the running daemon is asked what it is doing: a unix socket for `reclaimd status`
// (root only), Prometheus metrics in a node_exporter textfile written atomically, and an
// optional HTTP endpoint bound to loopback only. All non-blocking, served from the daemon's
// one thread.
//
// Loop-agnostic: after open(), fds() is a fixed set of fds to watch for EPOLLIN (an epoll fd
// holding the status listener, the HTTP listener, a nested epoll fd for the connections, the
// idle timer); the loop calls handle(fd, now) once per ready fd. The status socket and HTTP have
// separate connection budgets and idle deadlines enforced by the timer, so idle HTTP clients
// never starve `reclaimd status`, and a new scrape evicts the oldest idle client rather than
// being refused.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "base/Clock.h"
#include "base/Result.h"
#include "base/UniqueFd.h"
#include "controller/operate/Http.h"

namespace reclaimd::controller {

inline constexpr const char* kDefaultStatusSocket = "/run/reclaimd/status.sock";

struct EndpointOptions {
  std::string statusSocket = kDefaultStatusSocket;  // empty: none
  std::string metricsFile;                          // empty: none
  std::string metricsListen;                        // empty: none; else a loopback host:port
  // A client that has not finished within this is closed: the readiness probe's timeout.
  std::chrono::milliseconds clientTimeout{5000};
};

// What is at `path` before the status socket is bound there. Ok: nothing, or a stale socket
// nobody answers (it is replaced). Errors: EADDRINUSE when a daemon answers on it (another
// reclaimd), ENOTSOCK when it is something other than a socket (never unlinked).
Result<void> checkStatusSocket(const std::string& path);

class Endpoints {
 public:
  using Render = std::function<std::string()>;

  Endpoints() = default;
  Endpoints(const Endpoints&) = delete;
  Endpoints& operator=(const Endpoints&) = delete;
  // What stop() does, if it was not called, without a log line (logging may be shut down).
  ~Endpoints();

  // Removes the status socket if it is still ours, and marks the metrics file stopped
  // (`reclaimd_up 0`) so a stale file is not read as a running daemon; where that write fails
  // the old file (`reclaimd_up 1`) is removed rather than left saying the daemon runs. Logs a
  // failure: call it while logging is up. Only the first call does anything.
  void stop();

  // Binds what the options ask for. Errors: checkStatusSocket's, bind/listen errnos with the
  // path or address (endpointsExitCode maps them to exit codes).
  Result<void> open(const EndpointOptions& options);
  // What the answers say; called when a client asks, never otherwise.
  void setRenderers(Render status, Render metrics);

  // The fds to watch for EPOLLIN; fixed from open() on.
  std::vector<int> fds() const;
  // Serves whatever is ready on `fd` (one of fds()); never blocks.
  void handle(int fd, TimePoint now);

  // A turn has run: what the answers say may have changed. Until the next one, every client
  // gets the same rendering (a flood of scrapes costs one rendering per turn, not one each).
  void newTurn();

  // Binds the status socket again where its path was removed or replaced while the daemon runs (a
  // tmpfiles cleaner): `reclaimd status` would find nothing there until a restart. Checked once a
  // period at most (an lstat), on the terms of open(): never over another daemon's socket or a
  // file that is not a socket. Said once when it is bound again, once when it cannot be.
  void keepStatusSocket(TimePoint now);

  // Writes the metrics file when its period has passed since the last write (or `force`). Failures
  // are said once a minute at most, and a write that works after them once.
  void writeMetricsFile(const Render& metrics, TimePoint now, bool force = false);

  std::size_t connections() const { return connections_.size(); }

 private:
  struct Connection {
    UniqueFd fd;
    bool http = false;
    std::string in, out;
    std::size_t sent = 0;
    TimePoint since{};
  };
  void accept(int listenFd, bool http, TimePoint now);
  bool admit(int fd, bool http, TimePoint now);
  void refused(uid_t uid, pid_t pid, TimePoint now);
  void onConnections();
  void onReadable(Connection& c);
  void respond(Connection& c, std::string out);
  void flush(Connection& c);
  void close(int fd);
  void expire(TimePoint now);
  void arm(TimePoint now);
  Result<void> finish();
  Result<void> bindStatusSocket();
  const std::string& rendered(const Render& render, std::optional<std::string>& cache);

  EndpointOptions options_;
  bool stopped_ = false;
  std::optional<std::string> statusCache_, metricsCache_;
  // Events said at most once a period, with how many came since the last line.
  struct Tally {
    std::optional<TimePoint> said;
    std::uint64_t unsaid = 0;
    // Counts one at `now`; the count to say, or nothing within the period of the last line.
    std::optional<std::uint64_t> count(TimePoint now, std::chrono::nanoseconds period);
  };
  Tally refused_, dropped_, metricsFailed_;
  Render status_, metrics_;
  UniqueFd conns_, timer_, statusListen_, httpListen_, spare_;
  // An epoll holding the status listener: the fd the loop watches stays one when the listener is
  // made anew.
  UniqueFd statusWatch_;
  ino_t statusInode_ = 0;
  std::optional<TimePoint> statusChecked_;
  bool statusLost_ = false;  // said that it could not be bound again
  std::map<int, Connection> connections_;
  TimePoint lastMetricsWrite_{};
  bool metricsWritten_ = false;
  std::uint64_t metricsFailures_ = 0;  // writes failed since the last that worked
  std::string lastMetrics_;
};

// The exit code for an open() error (ExitCodes.h): another daemon on the socket, something
// else at its path, or a plain failure.
int endpointsExitCode(const Error& error);

}  // namespace reclaimd::controller

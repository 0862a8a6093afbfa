// The endpoints in-process, through their loop-agnostic interface (fds() + handle()): the
// connection budgets and idle deadlines, HTTP details, status socket ownership. (The metrics
// file: MetricsFileTest.)
#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <spdlog/spdlog.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <functional>
#include <vector>

#include "base/Clock.h"
#include "controller/operate/Endpoints.h"
#include "tests/unit/CapturedLog.h"
#include "tests/unit/Fixture.h"

namespace reclaimd::testing {
namespace {

using namespace std::chrono_literals;
using controller::EndpointOptions;
using controller::Endpoints;

int freePort() {
  return 20000 + static_cast<int>((::getpid() * 7 + 13) % 20000);
}

int connectTcp(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<std::uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0) << std::strerror(errno);
  return fd;
}

int connectUnix(const std::string& path) {
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  std::strncpy(a.sun_path, path.c_str(), sizeof a.sun_path - 1);
  EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  return fd;
}

void send(int fd, const std::string& text) {
  ASSERT_EQ(::write(fd, text.data(), text.size()), static_cast<ssize_t>(text.size()));
}

// Runs the endpoints as a loop would: poll their fds, handle each ready one, until `done`.
bool pumpUntil(Endpoints& e, const std::function<bool()>& done, std::chrono::milliseconds limit = 5s) {
  const auto end = SteadyClock::now() + limit;
  while (SteadyClock::now() < end) {
    if (done()) return true;
    std::vector<pollfd> fds;
    for (int fd : e.fds())
      fds.push_back(pollfd{fd, POLLIN, 0});
    if (::poll(fds.data(), fds.size(), 20) > 0) {
      for (const pollfd& p : fds) {
        if (p.revents & POLLIN) e.handle(p.fd, SteadyClock::now());
      }
    }
  }
  return done();
}

// Everything the peer sent before closing, or nullopt while it is still open.
std::optional<std::string> readClosed(int fd) {
  std::string out;
  char buf[4096];
  for (;;) {
    const ssize_t n = ::recv(fd, buf, sizeof buf, MSG_DONTWAIT);
    if (n > 0) {
      out.append(buf, static_cast<std::size_t>(n));
      continue;
    }
    if (n == 0) return out;
    return std::nullopt;
  }
}

class EndpointsTest : public ::testing::Test {
 protected:
  Result<void> open(EndpointOptions o) {
    auto r = e_.open(o);
    e_.setRenderers([] { return std::string("{\"status\":1}\n"); }, [] { return std::string("reclaimd_up 1\n"); });
    return r;
  }
  EndpointOptions options() {
    EndpointOptions o;
    o.statusSocket = fx_.path("status.sock");
    o.metricsListen = "127.0.0.1:" + std::to_string(port_);
    return o;
  }
  // What the status socket at `path` answers, served by e_.
  std::string statusAnswer(const std::string& path) {
    const int fd = connectUnix(path);
    std::optional<std::string> out;
    pumpUntil(e_, [&] { return (out = readClosed(fd)).has_value(); });
    ::close(fd);
    return out.value_or("(no answer)");
  }
  Fixture fx_;
  int port_ = freePort();
  Endpoints e_;
};

TEST_F(EndpointsTest, FdsAreFixedAfterOpen) {
  ASSERT_TRUE(open(options()).ok());
  EXPECT_EQ(e_.fds().size(), 4u);  // two listeners, the connections' epoll, the idle timer
}

// Idle clients are closed at their deadline by the timer, with no other client arriving (not
// only when a new connection comes).
TEST_F(EndpointsTest, IdleClientsAreClosedByTheTimer) {
  EndpointOptions o = options();
  o.clientTimeout = 200ms;
  ASSERT_TRUE(open(o).ok());
  std::vector<int> idle;
  for (int i = 0; i < 3; ++i)
    idle.push_back(connectTcp(port_));
  ASSERT_TRUE(pumpUntil(e_, [&] { return e_.connections() == 3; }));
  EXPECT_TRUE(pumpUntil(e_,
                        [&] {
                          for (int fd : idle) {
                            if (!readClosed(fd)) return false;
                          }
                          return true;
                        }))
      << e_.connections() << " connections left";
  for (int fd : idle)
    ::close(fd);
}

// A local user holding many idle HTTP connections neither takes the status socket's slots nor
// shuts a scraper out.
TEST_F(EndpointsTest, IdleHttpClientsStarveNeitherStatusNorScrape) {
  ASSERT_TRUE(open(options()).ok());
  std::vector<int> idle;
  for (std::size_t i = 0; i < 40; ++i) {
    idle.push_back(connectTcp(port_));
    // Accepted as they come, as the loop would (the listen backlog is short); past the budget of
    // 16, each newcomer takes the slot of the oldest.
    if (i < 16) {
      ASSERT_TRUE(pumpUntil(e_, [&] { return e_.connections() == i + 1; }));
    } else {
      ASSERT_TRUE(pumpUntil(e_, [&] { return readClosed(idle[i - 16]).has_value(); }));
    }
  }
  const int status = connectUnix(fx_.path("status.sock"));
  const int scrape = connectTcp(port_);
  send(scrape, "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
  std::optional<std::string> statusOut, scrapeOut;
  EXPECT_TRUE(pumpUntil(e_, [&] {
    if (!statusOut) statusOut = readClosed(status);
    if (!scrapeOut) scrapeOut = readClosed(scrape);
    return statusOut && scrapeOut;
  }));
  EXPECT_EQ(statusOut.value_or(""), "{\"status\":1}\n");
  EXPECT_EQ(scrapeOut.value_or("").rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << scrapeOut.value_or("");
  EXPECT_NE(scrapeOut.value_or("").find("reclaimd_up 1\n"), std::string::npos);
  for (int fd : idle)
    ::close(fd);
  ::close(status);
  ::close(scrape);
}

// Out of fds, a waiting connection cannot be accepted and its listener stays readable: it is
// taken and closed at once, or the loop would wake for it again and again until an fd frees up.
TEST_F(EndpointsTest, AConnectionBeyondTheFdLimitIsClosedNotLeftWaiting) {
  ASSERT_TRUE(open(options()).ok());
  const int client = connectUnix(fx_.path("status.sock"));
  rlimit old{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &old), 0);
  // The line the drop logs, said once while fds are free: UBSan's first check of a dynamic type
  // (the logger's) tests the memory through a pipe, which it cannot make at the fd limit, and
  // would report the check itself as undefined behaviour. Later checks of the type are cached.
  spdlog::warn("event=connection_dropped error=\"{}\" dropped={}", std::strerror(EMFILE), std::uint64_t{0});
  // The lowest free fd becomes the limit: the next accept fails with EMFILE.
  const int lowest = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  ASSERT_GE(lowest, 0);
  ::close(lowest);
  const rlimit low{static_cast<rlim_t>(lowest), old.rlim_max};
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &low), 0);
  const int listener = e_.fds().front();  // the status socket's
  e_.handle(listener, SteadyClock::now());
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &old), 0);
  EXPECT_TRUE(readClosed(client).has_value());
  pollfd p{listener, POLLIN, 0};
  EXPECT_EQ(::poll(&p, 1, 0), 0) << "the listener still has a connection waiting";
  EXPECT_EQ(e_.connections(), 0u);
  ::close(client);
  // With fds again, the socket answers as before.
  const int again = connectUnix(fx_.path("status.sock"));
  std::optional<std::string> out;
  EXPECT_TRUE(pumpUntil(e_, [&] { return (out = readClosed(again)).has_value(); }));
  EXPECT_EQ(out.value_or(""), "{\"status\":1}\n");
  ::close(again);
}

TEST_F(EndpointsTest, HeadAndBareLineFeeds) {
  ASSERT_TRUE(open(options()).ok());
  const int head = connectTcp(port_);
  send(head, "HEAD /metrics HTTP/1.1\r\n\r\n");
  const int lf = connectTcp(port_);
  send(lf, "GET /metrics HTTP/1.0\nHost: x\n\n");
  std::optional<std::string> headOut, lfOut;
  ASSERT_TRUE(pumpUntil(e_, [&] {
    if (!headOut) headOut = readClosed(head);
    if (!lfOut) lfOut = readClosed(lf);
    return headOut && lfOut;
  }));
  EXPECT_EQ(headOut->rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << *headOut;
  EXPECT_NE(headOut->find("Content-Length: 14\r\n"), std::string::npos) << *headOut;
  EXPECT_EQ(headOut->substr(headOut->size() - 4), "\r\n\r\n") << "HEAD: no body";
  EXPECT_EQ(lfOut->rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << *lfOut;
  EXPECT_EQ(lfOut->substr(lfOut->size() - 14), "reclaimd_up 1\n");
  ::close(head);
  ::close(lf);
}

TEST_F(EndpointsTest, ANonSocketAtThePathIsNeverReplaced) {
  fx_.write("status.sock", "an administrator's file");
  auto r = open(options());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, std::errc::not_a_socket) << r.error().message();
  EXPECT_EQ(controller::endpointsExitCode(r.error()), 73);
  EXPECT_EQ(fx_.read("status.sock"), "an administrator's file");
}

TEST_F(EndpointsTest, ALiveSocketIsRefusedAStaleOneReplaced) {
  ASSERT_TRUE(open(options()).ok());
  {
    Endpoints second;
    EndpointOptions o = options();
    o.metricsListen.clear();
    auto r = second.open(o);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code, std::errc::address_in_use) << r.error().message();
    EXPECT_EQ(controller::endpointsExitCode(r.error()), 75);
    EXPECT_NE(r.error().message().find("another reclaimd answers"), std::string::npos);
  }
  // The refused one left the first's socket in place: it still answers.
  const int status = connectUnix(fx_.path("status.sock"));
  std::optional<std::string> out;
  EXPECT_TRUE(pumpUntil(e_, [&] { return (out = readClosed(status)).has_value(); }));
  ::close(status);
  // A socket nobody listens on (a crash left it) is replaced.
  const std::string stale = fx_.path("stale.sock");
  {
    int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::strncpy(a.sun_path, stale.c_str(), sizeof a.sun_path - 1);
    ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    ::close(fd);
  }
  Endpoints third;
  EndpointOptions o;
  o.statusSocket = stale;
  EXPECT_TRUE(third.open(o).ok());
}

// A tmpfiles cleaner removes the socket, its directory with it, under the running daemon: the next
// check binds it again, on the fd the loop already watches, and says so once.
TEST_F(EndpointsTest, ARemovedStatusSocketIsBoundAgainAtTheNextCheck) {
  EndpointOptions o = options();
  o.statusSocket = fx_.path("run/status.sock");
  ASSERT_TRUE(open(o).ok());
  const std::vector<int> fds = e_.fds();
  const TimePoint t0 = SteadyClock::now();
  e_.keepStatusSocket(t0);
  std::filesystem::remove_all(fx_.path("run"));
  CapturedLog log;
  e_.keepStatusSocket(t0 + 1s);
  EXPECT_FALSE(std::filesystem::exists(o.statusSocket)) << "checked once a period, not at every turn";
  e_.keepStatusSocket(t0 + 10s);
  struct stat st {};
  ASSERT_EQ(::lstat(o.statusSocket.c_str(), &st), 0) << log.text();
  EXPECT_TRUE(S_ISSOCK(st.st_mode));
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_EQ(e_.fds(), fds);
  EXPECT_EQ(statusAnswer(o.statusSocket), "{\"status\":1}\n");
  e_.keepStatusSocket(t0 + 20s);
  EXPECT_EQ(log.count("event=status_socket_restored"), 1) << log.text();
  e_.stop();
  EXPECT_FALSE(std::filesystem::exists(o.statusSocket)) << "the new socket is the daemon's own to remove";
}

// Without systemd's RuntimeDirectory= the daemon makes the socket's directory itself: root only, as the
// unit does, whatever the umask. A directory that was there already keeps the mode its owner gave it.
TEST_F(EndpointsTest, AMissingStatusSocketDirectoryIsMadeRootOnly) {
  fx_.mkdir("shared");
  ASSERT_EQ(::chmod(fx_.path("shared").c_str(), 0755), 0);
  EndpointOptions o = options();
  o.statusSocket = fx_.path("run/status.sock");
  Endpoints other;
  EndpointOptions shared;
  shared.statusSocket = fx_.path("shared/status.sock");
  const mode_t previous = ::umask(0);
  const bool opened = open(o).ok();
  const bool openedShared = other.open(shared).ok();
  ::umask(previous);
  ASSERT_TRUE(opened);
  ASSERT_TRUE(openedShared);
  struct stat st {};
  ASSERT_EQ(::stat(fx_.path("run").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0700u);
  ASSERT_EQ(::stat(fx_.path("shared").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0755u);
}

// Another daemon started while the path was free keeps it: said once, and the path is taken back
// only once that daemon has gone.
TEST_F(EndpointsTest, AStatusSocketPathTakenMeanwhileIsLeftToItsOwner) {
  ASSERT_TRUE(open(options()).ok());
  const std::string path = fx_.path("status.sock");
  const TimePoint t0 = SteadyClock::now();
  ASSERT_EQ(::unlink(path.c_str()), 0);
  CapturedLog log;
  {
    Endpoints other;
    EndpointOptions o;
    o.statusSocket = path;
    ASSERT_TRUE(other.open(o).ok());
    struct stat before {};
    struct stat after {};
    ASSERT_EQ(::lstat(path.c_str(), &before), 0);
    e_.keepStatusSocket(t0);
    e_.keepStatusSocket(t0 + 10s);
    ASSERT_EQ(::lstat(path.c_str(), &after), 0);
    EXPECT_EQ(after.st_ino, before.st_ino) << "the other daemon's socket is left in place";
    EXPECT_EQ(log.count("event=status_socket_lost"), 1) << log.text();
  }
  e_.keepStatusSocket(t0 + 20s);
  EXPECT_EQ(log.count("event=status_socket_restored"), 1) << log.text();
  EXPECT_EQ(statusAnswer(path), "{\"status\":1}\n");
}

}  // namespace
}  // namespace reclaimd::testing

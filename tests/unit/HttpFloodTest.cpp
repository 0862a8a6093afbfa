// A local flood of /metrics: each wakeup takes a bounded number of connections, and one turn's
// rendering answers every scrape until the next turn. A flood of refused status clients is
// said in one line per period, not one each.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

#include "base/UniqueFd.h"
#include "controller/operate/Endpoints.h"
#include "tests/unit/CapturedLog.h"
#include "tests/unit/Fixture.h"

namespace reclaimd::controller {
namespace {

// Connects to 127.0.0.1:`port` and sends a whole GET of /metrics.
UniqueFd scrape(int port) {
  UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<std::uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) return UniqueFd();
  const std::string req = "GET /metrics HTTP/1.1\r\nHost: localhost\r\n\r\n";
  if (::write(fd.get(), req.data(), req.size()) != static_cast<ssize_t>(req.size())) return UniqueFd();
  return fd;
}

// Reads what the server sent (it closes after answering).
std::string answer(int fd) {
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = ::read(fd, buf, sizeof buf)) > 0)
    out.append(buf, static_cast<std::size_t>(n));
  return out;
}

TEST(HttpFlood, BoundedAcceptsPerWakeupAndOneRenderingPerTurn) {
  const int port = 40000 + (::getpid() % 20000);
  Endpoints endpoints;
  EndpointOptions options;
  options.statusSocket = "";
  options.metricsListen = "127.0.0.1:" + std::to_string(port);
  ASSERT_TRUE(endpoints.open(options).ok());
  int renderings = 0;
  endpoints.setRenderers({}, [&] {
    ++renderings;
    return std::string("reclaimd_up 1\n");
  });
  const int listener = endpoints.fds().front();
  std::vector<UniqueFd> clients;
  for (int i = 0; i < 12; ++i) {
    clients.push_back(scrape(port));
    ASSERT_TRUE(clients.back()) << i;
  }
  endpoints.handle(listener, TimePoint{});
  std::size_t served = 0;
  for (UniqueFd& c : clients) {
    char b;
    served += ::recv(c.get(), &b, 1, MSG_DONTWAIT | MSG_PEEK) > 0 ? 1 : 0;
  }
  EXPECT_LE(served, 4u) << "one wakeup takes a bounded number of connections; the rest wait for the next";
  EXPECT_GE(served, 1u);
  for (int wakeups = 0; wakeups < 8; ++wakeups)
    endpoints.handle(listener, TimePoint{});
  for (UniqueFd& c : clients)
    EXPECT_NE(answer(c.get()).find("reclaimd_up 1"), std::string::npos);
  EXPECT_EQ(renderings, 1) << "twelve scrapes within one turn, one rendering";
  endpoints.newTurn();
  UniqueFd next = scrape(port);
  endpoints.handle(listener, TimePoint{});
  EXPECT_NE(answer(next.get()).find("reclaimd_up 1"), std::string::npos);
  EXPECT_EQ(renderings, 2) << "a new turn renders again";
}

using testing::CapturedLog;

TEST(StatusFlood, RefusedClientsAreSaidAtMostOncePerPeriodWithTheirCount) {
  testing::Fixture fx;
  Endpoints endpoints;
  EndpointOptions options;
  options.statusSocket = fx.path("status.sock");
  ASSERT_TRUE(endpoints.open(options).ok());
  ASSERT_EQ(::chmod(options.statusSocket.c_str(), 0666), 0);  // made reachable by mistake
  ASSERT_EQ(::chmod(fx.root().c_str(), 0755), 0);
  constexpr int kTries = 6;  // within the listen backlog (8): connect() does not wait for an accept
  const pid_t child = ::fork();
  if (child == 0) {
    if (::setgid(65534) != 0 || ::setuid(65534) != 0) ::_exit(2);
    for (int i = 0; i < kTries; ++i) {
      UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
      sockaddr_un a{};
      a.sun_family = AF_UNIX;
      std::snprintf(a.sun_path, sizeof a.sun_path, "%s", options.statusSocket.c_str());
      if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) ::_exit(3);
    }
    ::_exit(0);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  CapturedLog log;
  const int listener = endpoints.fds().front();
  const TimePoint t0{};
  for (int i = 0; i < kTries; ++i)
    endpoints.handle(listener, t0 + std::chrono::milliseconds(i * 100));
  const std::string first = log.text();
  EXPECT_EQ(first.find("event=status_refused"), first.rfind("event=status_refused")) << "one line\n" << first;
  EXPECT_NE(first.find("uid=65534"), std::string::npos) << first;
  EXPECT_EQ(endpoints.connections(), 0u);
}

}  // namespace
}  // namespace reclaimd::controller

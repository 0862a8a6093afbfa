// Operating the daemon: `reclaimd status` over its socket, Prometheus metrics (file and HTTP),
// sd_notify messages to systemd, and the journal's structured fields.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <thread>

#include "base/Log.h"
#include "controller/operate/Endpoints.h"
#include "controller/operate/Status.h"
#include "tests/unit/DaemonHarness.h"
#include "tests/unit/FakeMachine.h"
#include "tests/unit/Fixture.h"
#include "tests/unit/Process.h"

namespace reclaimd::testing {
namespace {

using namespace std::chrono_literals;

TEST(Loopback, OnlyLoopbackAddresses) {
  EXPECT_TRUE(controller::parseLoopback("127.0.0.1:9101").ok());
  EXPECT_TRUE(controller::parseLoopback("127.1.2.3:9101").ok());
  EXPECT_TRUE(controller::parseLoopback("[::1]:9101").ok());
  EXPECT_TRUE(controller::parseLoopback("localhost:9101").ok());
  for (const char* bad : {"0.0.0.0:9101", "10.0.0.1:9101", "[::]:9101", "example.com:9101", "127.0.0.1", "127.0.0.1:0",
                          "127.0.0.1:70000", ":9101"}) {
    EXPECT_FALSE(controller::parseLoopback(bad).ok()) << bad;
  }
  auto wildcard = controller::parseLoopback("0.0.0.0:9101");
  ASSERT_FALSE(wildcard.ok());
  EXPECT_NE(wildcard.error().message().find("only loopback"), std::string::npos);
}

TEST(Journal, KeyValueFieldsBecomeJournalFields) {
  auto fields = journalFields(
      "event=reclaim_step cgroup=build.slice asked_mib=64.0 reason=\"no swap \\\"here\\\"\" stray word bad-key=1");
  EXPECT_EQ(fields, (std::vector<std::string>{"RECLAIMD_EVENT=reclaim_step", "RECLAIMD_CGROUP=build.slice",
                                              "RECLAIMD_ASKED_MIB=64.0", "RECLAIMD_REASON=no swap \"here\""}));
}

TEST(Metrics, ExpositionFormat) {
  controller::Status s;
  s.version = "0.1.0";
  s.requestedMode = s.effectiveMode = "gradual";
  s.idleState = "idle";
  s.reclaimedBytes = 1234;
  s.pressure.push_back({"machine", "trigger", false, 3, 1, 0.5});
  s.targets.push_back({"a\"b", "2", "gradual", true, false, 0, 99, 2, 1, 0.25, ""});
  const std::string m = controller::formatMetrics(s);
  EXPECT_NE(m.find("# TYPE reclaimd_reclaimed_bytes_total counter\nreclaimd_reclaimed_bytes_total 1234\n"),
            std::string::npos)
      << m;
  EXPECT_NE(m.find("reclaimd_up{mode=\"gradual\",requested=\"gradual\",version=\"0.1.0\"} 1"), std::string::npos);
  EXPECT_NE(m.find("reclaimd_machine_idle 1"), std::string::npos);
  EXPECT_NE(m.find("reclaimd_pressure_events_total{scope=\"machine\",watch=\"trigger\"} 3"), std::string::npos);
  EXPECT_NE(m.find("reclaimd_cgroup_reclaimed_bytes_total{cgroup=\"a\\\"b\",rule=\"2\"} 99"), std::string::npos) << m;
  // Every sample line belongs to a metric declared with HELP and TYPE before it.
  std::string declared;
  std::size_t pos = 0;
  while (pos < m.size()) {
    const std::size_t end = m.find('\n', pos);
    const std::string line = m.substr(pos, end - pos);
    pos = end + 1;
    if (line.rfind("# TYPE ", 0) == 0) declared = line.substr(7, line.find(' ', 7) - 7);
    if (line.empty() || line[0] == '#') continue;
    EXPECT_EQ(line.rfind(declared, 0), 0u) << line << " after TYPE " << declared;
  }
}

class OperateTest : public DaemonHarness {
 protected:
  void SetUp() override { fx_.write("policy.yaml", "idle:\n  grace: 1s\n  interval: 1s\n  sample_period: 100ms\n"); }
};

TEST_F(OperateTest, StatusOverTheSocket) {
  FakeMachine m(fx_);
  auto d = start();
  ASSERT_TRUE(waitLog("event=reclaim_step")) << log();
  struct stat st {};
  ASSERT_EQ(::stat(fx_.path("run/status.sock").c_str(), &st), 0) << "the directory is made if missing";
  EXPECT_EQ(st.st_mode & 0777, 0600u) << "root only";
  auto [code, out] = runCommand({RECLAIMD_BINARY, "status", "--socket", fx_.path("run/status.sock")});
  EXPECT_EQ(code, 0) << out;
  for (const char* key : {"version: ", "mode: gradual (swappiness=0)", "machine: idle",
                          "reclaimed: ", "target /: rule machine, gradual, idle"}) {
    EXPECT_NE(out.find(key), std::string::npos) << key << "\n" << out;
  }
  d->signal(SIGTERM);
  EXPECT_EQ(d->wait(5s), 0);
  EXPECT_NE(::access(fx_.path("run/status.sock").c_str(), F_OK), 0) << "the socket is removed on exit";
  auto [down, downOut] = runCommand({RECLAIMD_BINARY, "status", "--socket", fx_.path("run/status.sock")});
  EXPECT_EQ(down, 69) << downOut;
  EXPECT_NE(downOut.find("not running"), std::string::npos);
}

TEST_F(OperateTest, StaleSocketIsReplaced) {
  FakeMachine m(fx_);
  fx_.write("run/status.sock", "left over by a crash");
  auto d = start();
  ASSERT_TRUE(waitLog("event=start")) << log();
  auto [code, out] = runCommand({RECLAIMD_BINARY, "status", "--socket", fx_.path("run/status.sock")});
  EXPECT_EQ(code, 0) << out << log();
  d->signal(SIGTERM);
  EXPECT_EQ(d->wait(5s), 0);
}

// A minimal HTTP GET over loopback.
std::string httpGet(int port, const std::string& path) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<std::uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    return "";
  }
  const std::string req = "GET " + path + " HTTP/1.1\r\nHost: localhost\r\n\r\n";
  [[maybe_unused]] auto w = ::write(fd, req.data(), req.size());
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = ::read(fd, buf, sizeof buf)) > 0)
    out.append(buf, static_cast<std::size_t>(n));
  ::close(fd);
  return out;
}

TEST_F(OperateTest, MetricsFileAndHttp) {
  FakeMachine m(fx_);
  const int port = 20000 + (::getpid() % 20000);
  auto d =
      start({"--metrics-file", fx_.path("reclaimd.prom"), "--metrics-listen", "127.0.0.1:" + std::to_string(port)});
  ASSERT_TRUE(waitLog("event=reclaim_step")) << log();
  ASSERT_TRUE(eventually([&] { return fx_.read("reclaimd.prom").find("reclaimd_up{") != std::string::npos; }, 5s));
  struct stat st {};
  ASSERT_EQ(::stat(fx_.path("reclaimd.prom").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0644u) << "node_exporter runs as its own user";
  const std::string response = httpGet(port, "/metrics");
  EXPECT_EQ(response.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << response;
  EXPECT_NE(response.find("Content-Type: text/plain; version=0.0.4"), std::string::npos);
  EXPECT_NE(response.find("reclaimd_steps_total "), std::string::npos);
  EXPECT_NE(response.find("reclaimd_cgroup_reclaimed_bytes_total{cgroup=\"/\""), std::string::npos) << response;
  EXPECT_EQ(httpGet(port, "/").rfind("HTTP/1.1 404", 0), 0u);
  d->signal(SIGTERM);
  EXPECT_EQ(d->wait(5s), 0);
  auto [code, out] = runCommand(
      {RECLAIMD_BINARY, "--metrics-listen", "0.0.0.0:9101", "--proc-root", fx_.path("proc"), "--status-socket", ""});
  EXPECT_EQ(code, 64) << out;
}

// systemd's side of sd_notify: a datagram socket the daemon sends READY, WATCHDOG, STATUS... to.
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

TEST_F(OperateTest, NotifiesSystemd) {
  FakeMachine m(fx_);
  NotifySocket systemd(fx_.path("notify.sock"));
  ASSERT_TRUE(systemd.bound());
  // A 400 ms watchdog: pings must come at least every 200 ms, whatever the sample period.
  auto d = start({}, {systemd.env(), "WATCHDOG_USEC=400000"});
  ASSERT_TRUE(eventually([&] { return systemd.count("READY=1") > 0; }, 5s)) << systemd.drain() << log();
  EXPECT_NE(systemd.drain().find("STATUS=gradual (swappiness=0)"), std::string::npos) << systemd.drain();
  const std::size_t before = systemd.count("WATCHDOG=1");
  std::this_thread::sleep_for(1s);
  EXPECT_GE(systemd.count("WATCHDOG=1") - before, 4u) << systemd.drain();
  d->signal(SIGHUP);
  ASSERT_TRUE(eventually([&] { return systemd.count("RELOADING=1") > 0; }, 5s)) << systemd.drain();
  d->signal(SIGTERM);
  EXPECT_EQ(d->wait(5s), 0);
  EXPECT_EQ(systemd.count("STOPPING=1"), 1u) << systemd.drain();
}

// Each ping wakes PID 1: with a 4 s watchdog the daemon pings about once a second (half the
// ping interval), not on each of its 100 ms samples.
TEST_F(OperateTest, WatchdogPingsAreNotPerTick) {
  FakeMachine m(fx_);
  NotifySocket systemd(fx_.path("notify.sock"));
  ASSERT_TRUE(systemd.bound());
  auto d = start({"--log-level", "trace"}, {systemd.env(), "WATCHDOG_USEC=4000000"});
  ASSERT_TRUE(eventually([&] { return systemd.count("READY=1") > 0; }, 5s)) << systemd.drain() << log();
  std::this_thread::sleep_for(3s);
  d->signal(SIGTERM);
  EXPECT_EQ(d->wait(5s), 0);
  std::size_t ticks = 0;
  const std::string out = log();
  for (std::size_t p = out.find("event=tick"); p != std::string::npos; p = out.find("event=tick", p + 1))
    ++ticks;
  EXPECT_GE(ticks, 5u) << out;  // busy ticks (logged until the 1 s grace ends) came every 100 ms
  EXPECT_GE(systemd.count("WATCHDOG=1"), 3u) << systemd.drain();
  EXPECT_LE(systemd.count("WATCHDOG=1"), 5u) << systemd.drain();
}

}  // namespace
}  // namespace reclaimd::testing

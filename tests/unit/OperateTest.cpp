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

#include <cstring>
#include <filesystem>

#include "base/Log.h"
#include "controller/operate/Endpoints.h"
#include "controller/operate/Status.h"
#include "tests/unit/DaemonHarness.h"
#include "tests/unit/SimFiles.h"
#include "tests/unit/Fixture.h"
#include "tests/unit/NotifySocket.h"
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
  EXPECT_NE(m.find("\nreclaimd_up 1\n"), std::string::npos);
  EXPECT_NE(m.find("reclaimd_mode_info{requested=\"gradual\",effective=\"gradual\","), std::string::npos) << m;
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
  SimFiles m(fx_);
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

// A file that is not a socket is never unlinked; a socket nobody answers (a crash left it) is
// replaced.
TEST_F(OperateTest, SocketPathOwnership) {
  SimFiles m(fx_);
  fx_.write("run/status.sock", "an administrator's file");
  auto refused = start();
  EXPECT_EQ(refused->wait(5s), 73) << log();
  EXPECT_EQ(fx_.read("run/status.sock"), "an administrator's file");
  EXPECT_TRUE(logHas("is not a socket; refusing to replace it")) << log();
  fx_.remove("run/status.sock");
  {
    int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::strncpy(a.sun_path, fx_.path("run/status.sock").c_str(), sizeof a.sun_path - 1);
    ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    ::close(fd);  // bound, never listening, left behind
  }
  auto d = start();
  ASSERT_TRUE(waitLog("event=start")) << log();
  auto [code, out] = runCommand({RECLAIMD_BINARY, "status", "--socket", fx_.path("run/status.sock")});
  EXPECT_EQ(code, 0) << out << log();
  d->signal(SIGTERM);
  EXPECT_EQ(d->wait(5s), 0);
}

// A second daemon on the same socket refuses to start (its own exit code) and leaves the first
// one reachable.
TEST_F(OperateTest, SecondDaemonOnTheSocketRefuses) {
  SimFiles m(fx_);
  auto first = start();
  ASSERT_TRUE(waitLog("event=start")) << log();
  auto [code, out] = runCommand({RECLAIMD_BINARY, "--proc-root", fx_.path("proc"), "--cgroup-root", fx_.path("cg"),
                                 "--config", fx_.path("policy.yaml"), "--status-socket", fx_.path("run/status.sock")});
  EXPECT_EQ(code, 75) << out;
  EXPECT_NE(out.find("another reclaimd answers"), std::string::npos) << out;
  auto [statusCode, statusOut] = runCommand({RECLAIMD_BINARY, "status", "--socket", fx_.path("run/status.sock")});
  EXPECT_EQ(statusCode, 0) << statusOut;
  first->signal(SIGTERM);
  EXPECT_EQ(first->wait(5s), 0);
}

// EACCES on the socket is "permission denied" (77), not "not running" (69).
TEST_F(OperateTest, StatusPermissionDenied) {
  SimFiles m(fx_);
  ::chmod(fx_.root().c_str(), 0755);  // nobody may reach the socket's directory, not the socket
  auto d = start();
  ASSERT_TRUE(waitLog("event=start")) << log();
  ::chmod(fx_.path("run").c_str(), 0755);
  auto [code, out] = runCommand({"/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                                 RECLAIMD_BINARY, "status", "--socket", fx_.path("run/status.sock")});
  EXPECT_EQ(code, 77) << out;
  EXPECT_NE(out.find("permission denied"), std::string::npos) << out;
  d->signal(SIGTERM);
  EXPECT_EQ(d->wait(5s), 0);
}

// A mistyped --cgroup-root is an error at start: never a fall back to dropcache that writes
// drop_caches.
TEST_F(OperateTest, MistypedCgroupRootIsAnError) {
  SimFiles m(fx_);
  fx_.write("proc/sys/vm/drop_caches", "");
  for (const std::string& root : {fx_.path("cgroup-typo"), fx_.path("policy.yaml"), fx_.path("proc")}) {
    auto [code, out] = runCommand({RECLAIMD_BINARY, "--proc-root", fx_.path("proc"), "--cgroup-root", root, "--config",
                                   fx_.path("policy.yaml"), "--status-socket", ""});
    EXPECT_EQ(code, 66) << root << "\n" << out;
    EXPECT_NE(out.find("--cgroup-root " + root), std::string::npos) << out;
    auto [probeCode, probeOut] =
        runCommand({RECLAIMD_BINARY, "probe", "--proc-root", fx_.path("proc"), "--cgroup-root", root});
    EXPECT_EQ(probeCode, 66) << probeOut;
  }
  EXPECT_EQ(fx_.read("proc/sys/vm/drop_caches"), "");
}

TEST(Cli, PerSubcommandOptions) {
  for (const std::vector<std::string>& args : {std::vector<std::string>{"status", "--config", "/nonexistent"},
                                               {"probe", "--metrics-listen", "127.0.0.1:1"},
                                               {"check-config", "x.yaml", "--dry-run"},
                                               {"status", "--proc-root", "/proc"},
                                               {"run", "--socket", "/x"},
                                               {"run", "--json"},
                                               {"status", "--sys-root", "/sys"}}) {
    std::vector<std::string> argv = {RECLAIMD_BINARY};
    argv.insert(argv.end(), args.begin(), args.end());
    auto [code, out] = runCommand(argv);
    EXPECT_EQ(code, 64) << args[0] << " " << args[1] << "\n" << out;
  }
  auto [runCode, runHelp] = runCommand({RECLAIMD_BINARY, "run", "--help"});
  EXPECT_EQ(runCode, 0);
  for (const char* option : {"--metrics-file", "--status-socket", "--dry-run", "--cgroup-root", "--sys-root"})
    EXPECT_NE(runHelp.find(option), std::string::npos) << option << "\n" << runHelp;
  auto [statusCode, statusHelp] = runCommand({RECLAIMD_BINARY, "status", "--help"});
  EXPECT_EQ(statusCode, 0);
  EXPECT_NE(statusHelp.find("--json"), std::string::npos);
  EXPECT_EQ(statusHelp.find("--metrics-file"), std::string::npos) << statusHelp;
  auto [vCode, version] = runCommand({RECLAIMD_BINARY, "--version"});
  EXPECT_EQ(vCode, 0);
  EXPECT_NE(version.find(std::string("(") + controller::buildCommit() + ")"), std::string::npos) << version;
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
  SimFiles m(fx_);
  const int port = 20000 + (::getpid() % 20000);
  // A user who may write the textfile directory plants the name the temporary once had.
  fx_.write("secret", "root's own");
  std::filesystem::create_symlink(fx_.path("secret"), fx_.path("reclaimd.prom.tmp"));
  auto d =
      start({"--metrics-file", fx_.path("reclaimd.prom"), "--metrics-listen", "127.0.0.1:" + std::to_string(port)});
  ASSERT_TRUE(waitLog("event=reclaim_step")) << log();
  ASSERT_TRUE(eventually([&] { return fx_.read("reclaimd.prom").find("\nreclaimd_up 1\n") != std::string::npos; }, 5s));
  EXPECT_EQ(fx_.read("secret"), "root's own") << "the planted symlink was not followed";
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
  EXPECT_NE(fx_.read("reclaimd.prom").find("\nreclaimd_up 0\n"), std::string::npos) << "stopped: up 0";
  EXPECT_EQ(fx_.read("secret"), "root's own");
  auto [code, out] = runCommand(
      {RECLAIMD_BINARY, "--metrics-listen", "0.0.0.0:9101", "--proc-root", fx_.path("proc"), "--status-socket", ""});
  EXPECT_EQ(code, 64) << out;
}

TEST_F(OperateTest, NotifiesSystemd) {
  SimFiles m(fx_);
  NotifySocket systemd(fx_.path("notify.sock"));
  ASSERT_TRUE(systemd.bound());
  // A 1 s watchdog (the shortest honoured): pings must come at least every 500 ms, whatever the
  // sample period.
  auto d = start({}, {systemd.env(), "WATCHDOG_USEC=1000000"});
  ASSERT_TRUE(eventually([&] { return systemd.count("READY=1") > 0; }, 5s)) << systemd.drain() << log();
  EXPECT_NE(systemd.drain().find("STATUS=gradual (swappiness=0)"), std::string::npos) << systemd.drain();
  // How often the loop pings is the Notifier's law (NotifyTest.cpp); here, that it goes on.
  const std::size_t before = systemd.count("WATCHDOG=1");
  EXPECT_TRUE(eventually([&] { return systemd.count("WATCHDOG=1") >= before + 2; }, 10s)) << systemd.drain();
  d->signal(SIGHUP);
  ASSERT_TRUE(eventually([&] { return systemd.count("RELOADING=1") > 0; }, 5s)) << systemd.drain();
  d->signal(SIGTERM);
  EXPECT_EQ(d->wait(5s), 0);
  EXPECT_EQ(systemd.count("STOPPING=1"), 1u) << systemd.drain();
}

// WATCHDOG_USEC=1 taken as given would wake the loop (and ping PID 1) every millisecond: it is
// raised to the 1 s minimum (how often that pings: NotifyTest.cpp) with one log line.
TEST_F(OperateTest, TinyWatchdogIsClamped) {
  SimFiles m(fx_);
  NotifySocket systemd(fx_.path("notify.sock"));
  ASSERT_TRUE(systemd.bound());
  auto d = start({}, {systemd.env(), "WATCHDOG_USEC=1"});
  ASSERT_TRUE(eventually([&] { return systemd.count("WATCHDOG=1") > 0; }, 5s)) << systemd.drain() << log();
  d->signal(SIGTERM);
  EXPECT_EQ(d->wait(5s), 0);
  EXPECT_EQ(count("event=watchdog_clamped"), 1u) << log();
}

// A WATCHDOG_USEC that is not a number is said once, and the daemon runs without pinging.
TEST_F(OperateTest, MalformedWatchdogIsSaid) {
  SimFiles m(fx_);
  NotifySocket systemd(fx_.path("notify.sock"));
  ASSERT_TRUE(systemd.bound());
  auto d = start({}, {systemd.env(), "WATCHDOG_USEC=30s"});
  ASSERT_TRUE(eventually([&] { return systemd.count("READY=1") > 0; }, 5s)) << systemd.drain() << log();
  d->signal(SIGTERM);
  EXPECT_EQ(d->wait(5s), 0);
  EXPECT_EQ(systemd.count("WATCHDOG=1"), 0u) << systemd.drain();
  EXPECT_EQ(count("event=watchdog_invalid"), 1u) << log();
  EXPECT_NE(log().find("WATCHDOG_USEC=30s: not a decimal number"), std::string::npos) << log();
}

}  // namespace
}  // namespace reclaimd::testing

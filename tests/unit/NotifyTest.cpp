// The watchdog's law, in process with made-up times: how often the loop pings systemd, and by
// when it must wake for the next ping. Each ping wakes PID 1, and a late one gets the daemon
// killed; the end-to-end tests (OperateTest.cpp) show the daemon pings at all.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <string>

#include "base/Event.h"
#include "controller/operate/Notify.h"
#include "tests/unit/CapturedLog.h"
#include "tests/unit/Fixture.h"
#include "tests/unit/NotifySocket.h"

namespace reclaimd::testing {
namespace {

using namespace std::chrono_literals;
using controller::Notifier;

// systemd's environment for a Notifier made while it lives: its socket and WATCHDOG_USEC.
class Systemd {
 public:
  Systemd(const Fixture& fx, const char* watchdogUsec) : socket_(fx.path("notify.sock")) {
    ::setenv("NOTIFY_SOCKET", socket_.path().c_str(), 1);
    ::setenv("WATCHDOG_USEC", watchdogUsec, 1);
    ::unsetenv("WATCHDOG_PID");
  }
  ~Systemd() {
    ::unsetenv("NOTIFY_SOCKET");
    ::unsetenv("WATCHDOG_USEC");
  }
  Systemd(const Systemd&) = delete;
  Systemd& operator=(const Systemd&) = delete;
  std::size_t pings() { return socket_.count("WATCHDOG=1"); }
  std::size_t count(const std::string& what) { return socket_.count(what); }
  bool bound() const { return socket_.bound(); }

 private:
  NotifySocket socket_;
};

const TimePoint kStart = TimePoint{} + 1h;

TEST(Notify, AFourSecondWatchdogIsPingedEverySecondNotOnEveryTick) {
  Fixture fx;
  Systemd systemd(fx, "4000000");
  ASSERT_TRUE(systemd.bound());
  Notifier notifier;
  for (int tick = 0; tick <= 30; ++tick)  // 3 s of 100 ms samples
    notifier.watchdog(kStart + tick * 100ms);
  EXPECT_EQ(systemd.pings(), 4u) << "at 0, 1, 2 and 3 s: half the ping interval apart, not 31";
}

// A message is newline-separated assignments, STATUS= one of them: a cgroup's name in the status
// line (its last action) cannot end it and add assignments of its own.
TEST(Notify, ANewlineInTheStatusLineAddsNoAssignment) {
  Fixture fx;
  Systemd systemd(fx, "4000000");
  ASSERT_TRUE(systemd.bound());
  Notifier notifier;
  notifier.ready("gradual, last: reclaimed 8.0 MiB from a\nSTOPPING=1");
  notifier.status("gradual, last: reclaimed 8.0 MiB from b\nMAINPID=1");
  EXPECT_EQ(systemd.count("\nSTOPPING=1"), 0u);
  EXPECT_EQ(systemd.count("\nMAINPID=1"), 0u);
  EXPECT_EQ(systemd.count("STATUS=gradual, last: reclaimed 8.0 MiB from b\\x0aMAINPID=1"), 1u)
      << "said as reclaimd status says it";
}

TEST(Notify, TheLoopWakesForTheNextPingWellWithinTheTimeout) {
  Fixture fx;
  Systemd systemd(fx, "1000000");
  ASSERT_TRUE(systemd.bound());
  Notifier notifier;
  EXPECT_FALSE(notifier.watchdogDeadline().has_value()) << "the first turn pings at once";
  TimePoint now = kStart;
  for (int turn = 0; turn < 10; ++turn) {
    // An idle loop sleeps a whole sample period (1 s): the deadline wakes it sooner.
    notifier.watchdog(now);
    ASSERT_TRUE(notifier.watchdogDeadline().has_value());
    const TimePoint wake = std::min(now + 1s, *notifier.watchdogDeadline());
    EXPECT_EQ(wake - now, 500ms) << "half the 1 s timeout";
    now = wake;
  }
  EXPECT_EQ(systemd.pings(), 10u) << "every wake the deadline asked for pings";
}

TEST(Notify, AClampedWatchdogPingsFourTimesASecondHoweverOftenTheLoopTurns) {
  Fixture fx;
  Systemd systemd(fx, "1");
  ASSERT_TRUE(systemd.bound());
  Notifier notifier;
  for (int ms = 0; ms < 1000; ++ms)
    notifier.watchdog(kStart + ms * 1ms);
  EXPECT_EQ(systemd.pings(), 4u) << "at 0, 250, 500 and 750 ms, not one per millisecond";
}

TEST(Notify, NoWatchdogNoPings) {
  Fixture fx;
  Systemd systemd(fx, "0");
  Notifier notifier;
  for (int tick = 0; tick < 10; ++tick)
    notifier.watchdog(kStart + tick * 1s);
  EXPECT_FALSE(notifier.watchdogDeadline().has_value());
  EXPECT_EQ(systemd.pings(), 0u);
}

// WATCHDOG_USEC is whatever the environment holds, and the warning quotes it: escaped as every event's
// values are, it cannot end the line and forge an event of its own.
TEST(Notify, AnInvalidWatchdogIsSaidOnOneEscapedLine) {
  Fixture fx;
  const std::string value = "5\"\nevent=forged";
  Systemd systemd(fx, value.c_str());
  CapturedLog log;
  Notifier notifier;
  const std::string text = log.text();
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 1) << text;
  EXPECT_EQ(text.rfind("event=watchdog_invalid error=", 0), 0u) << text;
  EXPECT_NE(text.find(escapeValue("WATCHDOG_USEC=" + value + ": not a decimal number")), std::string::npos) << text;
}

}  // namespace
}  // namespace reclaimd::testing

// Telling systemd how the daemon is (sd_notify): READY after the probe, WATCHDOG from the loop,
// RELOADING around SIGHUP, STATUS with the mode and the last action, STOPPING. Nothing is sent
// when not started by systemd (no NOTIFY_SOCKET).
#pragma once

#include <chrono>
#include <optional>
#include <string>

#include "base/Clock.h"

namespace reclaimd::controller {

// The shortest watchdog honoured. One loop turn may legitimately take a good part of a second
// (a reclaim step is written in timed chunks, a walk of a large tree): a shorter WatchdogSec=
// would have systemd kill a healthy daemon, and WATCHDOG_USEC=1 would wake the loop every millisecond. Shorter
// values are raised to this, with one log line.
inline constexpr std::chrono::seconds kMinWatchdog{1};

class Notifier {
 public:
  Notifier();

  void ready(const std::string& status);
  void reloading();
  void stopping();
  void status(const std::string& text);
  // Started by systemd (NOTIFY_SOCKET set): without it the loop need not build a status line.
  bool enabled() const { return enabled_; }
  // Pings when half the ping interval has passed since the last ping, not on every tick: each
  // ping wakes PID 1: with a 1 s tick and WatchdogSec=30s, 4 pings per 30 s instead of 30.
  void watchdog(TimePoint now);
  // The latest moment the loop must wake for the next ping; nullopt when the watchdog is off.
  std::optional<TimePoint> watchdogDeadline() const;
  // Half the (clamped) watchdog timeout; nullopt when the watchdog is off.
  std::optional<std::chrono::nanoseconds> pingInterval() const { return interval_; }

 private:
  void send(const std::string& state);

  // Half the watchdog timeout systemd set (WatchdogSec=).
  std::optional<std::chrono::nanoseconds> interval_;
  std::optional<TimePoint> lastPing_;
  bool enabled_ = false;
  std::string lastStatus_;
};

}  // namespace reclaimd::controller

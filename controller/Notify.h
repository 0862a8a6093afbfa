// Telling systemd how the daemon is (sd_notify): READY after the probe, WATCHDOG from the loop,
// RELOADING around SIGHUP, STATUS with the mode and the last action, STOPPING. Nothing is sent
// when not started by systemd (no NOTIFY_SOCKET).
#pragma once

#include <chrono>
#include <optional>
#include <string>

namespace reclaimd::controller {

class Notifier {
 public:
  Notifier();

  void ready(const std::string& status);
  void reloading();
  void stopping();
  void status(const std::string& text);
  void watchdog();
  // Half the watchdog timeout systemd set (WatchdogSec=): how often to ping; nullopt when off.
  std::optional<std::chrono::nanoseconds> watchdogInterval() const { return interval_; }

 private:
  std::optional<std::chrono::nanoseconds> interval_;
  std::string lastStatus_;
};

}  // namespace reclaimd::controller

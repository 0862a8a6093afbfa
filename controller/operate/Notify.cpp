#include "controller/operate/Notify.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <ctime>

#include "base/Systemd.h"

namespace reclaimd::controller {

Notifier::Notifier() {
  if (auto usec = sdWatchdog()) {
    const std::chrono::microseconds timeout = *usec;
    if (timeout < kMinWatchdog) {
      spdlog::warn(
          "event=watchdog_clamped watchdog_usec={} used_usec={} why=\"below the 1s minimum a loop turn may take\"",
          timeout.count(), std::chrono::microseconds(kMinWatchdog).count());
    }
    interval_ = std::max<std::chrono::nanoseconds>(timeout, kMinWatchdog) / 2;
  }
  const char* socket = std::getenv("NOTIFY_SOCKET");
  enabled_ = socket != nullptr && *socket != '\0';
}

void Notifier::ready(const std::string& text) {
  lastStatus_ = text;
  (void)sdNotify("READY=1\nSTATUS=" + text);
}

void Notifier::reloading() {
  // MONOTONIC_USEC lets systemd 253+ (Type=notify-reload) match the reload; older ones ignore it.
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  (void)sdNotify("RELOADING=1\nMONOTONIC_USEC=" +
                 std::to_string(static_cast<unsigned long long>(ts.tv_sec) * 1000000ULL +
                                static_cast<unsigned long long>(ts.tv_nsec) / 1000));
}

void Notifier::stopping() {
  (void)sdNotify("STOPPING=1");
}

void Notifier::status(const std::string& text) {
  if (text == lastStatus_) return;
  lastStatus_ = text;
  (void)sdNotify("STATUS=" + text);
}

void Notifier::watchdog(TimePoint now) {
  if (!interval_) return;
  if (lastPing_ && now - *lastPing_ < *interval_ / 2) return;
  lastPing_ = now;
  (void)sdNotify("WATCHDOG=1");
}

std::optional<TimePoint> Notifier::watchdogDeadline() const {
  // The first tick pings at once, so there is no deadline before it.
  if (!interval_ || !lastPing_) return std::nullopt;
  return *lastPing_ + *interval_;
}

}  // namespace reclaimd::controller

#include "controller/operate/Notify.h"

#include <spdlog/spdlog.h>
#include <systemd/sd-daemon.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <ctime>

namespace reclaimd::controller {

Notifier::Notifier() {
  std::uint64_t usec = 0;
  // unset_environment=0: a child (there are none) would see it too; harmless.
  if (sd_watchdog_enabled(0, &usec) > 0 && usec > 0) {
    const std::chrono::microseconds timeout(usec);
    if (timeout < kMinWatchdog) {
      spdlog::warn(
          "event=watchdog_clamped watchdog_usec={} used_usec={} why=\"below the 1s minimum a loop turn may take\"",
          usec, std::chrono::microseconds(kMinWatchdog).count());
    }
    interval_ = std::max<std::chrono::nanoseconds>(timeout, kMinWatchdog) / 2;
  }
  const char* socket = std::getenv("NOTIFY_SOCKET");
  enabled_ = socket != nullptr && *socket != '\0';
}

void Notifier::ready(const std::string& text) {
  lastStatus_ = text;
  sd_notifyf(0, "READY=1\nSTATUS=%s", text.c_str());
}

void Notifier::reloading() {
  // MONOTONIC_USEC lets systemd 253+ (Type=notify-reload) match the reload; older ones ignore it.
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  sd_notifyf(
      0, "RELOADING=1\nMONOTONIC_USEC=%llu",
      static_cast<unsigned long long>(ts.tv_sec) * 1000000ULL + static_cast<unsigned long long>(ts.tv_nsec) / 1000);
}

void Notifier::stopping() {
  sd_notify(0, "STOPPING=1");
}

void Notifier::status(const std::string& text) {
  if (text == lastStatus_) return;
  lastStatus_ = text;
  sd_notifyf(0, "STATUS=%s", text.c_str());
}

void Notifier::watchdog(TimePoint now) {
  if (!interval_) return;
  if (lastPing_ && now - *lastPing_ < *interval_ / 2) return;
  lastPing_ = now;
  sd_notify(0, "WATCHDOG=1");
}

std::optional<TimePoint> Notifier::watchdogDeadline() const {
  // The first tick pings at once, so there is no deadline before it.
  if (!interval_ || !lastPing_) return std::nullopt;
  return *lastPing_ + *interval_;
}

}  // namespace reclaimd::controller

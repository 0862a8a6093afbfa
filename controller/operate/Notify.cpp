#include "controller/operate/Notify.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <ctime>

#include "base/Event.h"
#include "base/Log.h"
#include "base/Systemd.h"
#include "controller/operate/Status.h"

namespace reclaimd::controller {

Notifier::Notifier() {
  auto watchdog = sdWatchdog();
  if (!watchdog) {
    // systemd set it, so it expects pings; without a number the interval is unknown, and
    // pinging at a guess could still miss. Said once, so the unit's setting gets fixed; the error
    // quotes the variable's value, which an Event escapes, so whatever it holds stays one line.
    emit(Event(Severity::Warn, "watchdog_invalid")
             .add("error", watchdog.error().message())
             .add("why", "no watchdog pings, ignoring the variable"));
  } else if (const auto& usec = *watchdog) {
    const std::chrono::microseconds timeout = *usec;
    if (timeout < kMinWatchdog) {
      emit(Event(Severity::Warn, "watchdog_clamped")
               .add("watchdog_usec", timeout.count())
               .add("used_usec", std::chrono::microseconds(kMinWatchdog).count())
               .add("why", "below the 1s minimum a loop turn may take"));
    }
    interval_ = std::max<std::chrono::nanoseconds>(timeout, kMinWatchdog) / 2;
  }
  const char* socket = std::getenv("NOTIFY_SOCKET");
  enabled_ = socket != nullptr && *socket != '\0';
}

// A notification systemd does not take is ignored, as sd_notify(3)'s callers do: the loop must
// not stop for it, and systemd itself shows what it cost (a start that times out, a watchdog
// that fires, a stale status line).
void Notifier::send(const std::string& state) {
  (void)sdNotify(state);
}

void Notifier::ready(const std::string& text) {
  lastStatus_ = text;
  send("READY=1\nSTATUS=" + printable(text));
}

void Notifier::reloading() {
  // MONOTONIC_USEC lets systemd 253+ (Type=notify-reload) match the reload; older ones ignore it.
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  send("RELOADING=1\nMONOTONIC_USEC=" +
                 std::to_string(static_cast<unsigned long long>(ts.tv_sec) * 1000000ULL +
                                static_cast<unsigned long long>(ts.tv_nsec) / 1000));
}

void Notifier::stopping() {
  send("STOPPING=1");
}

void Notifier::status(const std::string& text) {
  if (text == lastStatus_) return;
  lastStatus_ = text;
  // Assignments are separated by newlines: one in a cgroup's name would end STATUS= and start an
  // assignment of the name's choosing (MAINPID=, STOPPING=).
  send("STATUS=" + printable(text));
}

void Notifier::watchdog(TimePoint now) {
  if (!interval_) return;
  if (lastPing_ && now - *lastPing_ < *interval_ / 2) return;
  lastPing_ = now;
  send("WATCHDOG=1");
}

std::optional<TimePoint> Notifier::watchdogDeadline() const {
  // The first tick pings at once, so there is no deadline before it.
  if (!interval_ || !lastPing_) return std::nullopt;
  return *lastPing_ + *interval_;
}

}  // namespace reclaimd::controller

// The two systemd protocols reclaimd speaks, written out rather than linked from libsystemd:
// libsystemd brings libgcrypt, liblzma, libzstd, liblz4 and libcap with it, 1.3 MiB of the
// daemon's resident memory for two datagrams. Both protocols are stable and documented
// (sd_notify(3), systemd's "Native Journal Protocol").
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/Result.h"

namespace reclaimd {

// Sends `state` ("READY=1\nSTATUS=...") to $NOTIFY_SOCKET. Returns false when not started by
// systemd (no NOTIFY_SOCKET); errors: the socket's errno.
Result<bool> sdNotify(std::string_view state);

// The watchdog interval systemd set (WATCHDOG_USEC, for this process per WATCHDOG_PID);
// nullopt when none. Errors: Errc::Parse naming the variable whose value is not a number (as
// sd_watchdog_enabled's -EINVAL).
Result<std::optional<std::chrono::microseconds>> sdWatchdog();

// Sends one journal entry of "KEY=value" fields to /run/systemd/journal/socket (a value with a
// newline is sent in the protocol's length-prefixed form). Errors: the socket's errno.
Result<void> journalSend(const std::vector<std::string>& fields);

}  // namespace reclaimd

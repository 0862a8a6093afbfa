// Logging: spdlog, key=value fields, never blocking the loop.
//
// Messages start with `event=<name>` followed by key=value fields, so they read well in a
// terminal and parse with one split. The logger is asynchronous with a bounded queue that
// drops the oldest line when full: a stalled stderr or journal must never stall reclaim
// decisions or the SIGTERM path.
#pragma once

#include <spdlog/spdlog.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace reclaimd {

class Event;
enum class Severity;

// "trace" | "debug" | "info" | "warn" | "error" | "off".
std::optional<spdlog::level::level_enum> parseLogLevel(std::string_view name);

// Installs the default logger, asynchronous: to journald with structured fields when stderr is
// connected to the journal (systemd sets JOURNAL_STREAM to its device:inode), else key=value
// lines on stderr. Safe to call once at start.
void initLogging(spdlog::level::level_enum level);

// The journal fields for one message: "event=step cgroup=/ asked_mib=64.0" gives
// RECLAIMD_EVENT=step, RECLAIMD_CGROUP=/, RECLAIMD_ASKED_MIB=64.0 (quoted values unquoted).
// Exposed for tests.
std::vector<std::string> journalFields(std::string_view message);

// True when stderr is the journal stream systemd announced in JOURNAL_STREAM.
bool stderrIsJournal();

// Logs one event (Event.h) at its severity, as one line.
void emit(const Event& event);
// Whether events of `severity` reach the log at its level: a caller that would build one every
// second (the per-tick trace line) asks first, so a daemon at info does not format it at all.
bool logs(Severity severity);

// Flushes and stops the logging thread; call before exit.
void shutdownLogging();

}  // namespace reclaimd

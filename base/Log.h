// Logging: spdlog, key=value fields, never blocking the loop.
//
// Messages start with `event=<name>` followed by key=value fields, so they read well in a
// terminal and parse with one split. The logger is asynchronous with a bounded queue that
// drops the oldest line when full: a stalled stderr or journal must never stall reclaim
// decisions or the SIGTERM path.
#pragma once

#include <spdlog/spdlog.h>

#include <optional>
#include <string_view>

namespace reclaimd {

// "trace" | "debug" | "info" | "warn" | "error" | "off".
std::optional<spdlog::level::level_enum> parseLogLevel(std::string_view name);

// Installs the default logger (stderr, asynchronous). Safe to call once at start.
void initLogging(spdlog::level::level_enum level);

// Flushes and stops the logging thread; call before exit.
void shutdownLogging();

}  // namespace reclaimd

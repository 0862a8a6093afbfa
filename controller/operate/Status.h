// The renderings of what the running daemon is doing (controller/engine/StatusData.h): the
// text of `reclaimd status`, its JSON (`reclaimd status --json`), and the Prometheus text
// exposition of the metrics. Pure.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/Result.h"
#include "controller/engine/StatusData.h"

namespace reclaimd::controller {

// "key: value" lines, then one line per target and pressure scope.
std::string formatStatus(const Status& status);

// The same as one JSON object (field names in snake_case; absent optionals are null).
std::string formatStatusJson(const Status& status);

// The JSON back into a Status (what `reclaimd status` does with the daemon's answer). Missing
// fields keep their defaults (an older or newer daemon); malformed JSON is Errc::Parse.
Result<Status> parseStatusJson(std::string_view json);

// Prometheus text format 0.0.4: reclaimd_* and process_* metrics with HELP and TYPE lines.
std::string formatMetrics(const Status& status);

// A label value as the exposition format wants it: backslash, quote and newline escaped,
// invalid UTF-8 replaced by U+FFFD (cgroup names are bytes a local user may choose).
std::string escapeLabel(std::string_view value);

// A cgroup name or rule as one line of text (the status text, systemd's STATUS=): control bytes
// as \xNN, so a newline in a name cannot forge a line; invalid UTF-8 as U+FFFD. Backslashes stay
// (systemd's \x2d).
std::string printable(std::string_view value);

}  // namespace reclaimd::controller

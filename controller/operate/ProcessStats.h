// The process's own figures for the process_* metrics (the names and meanings the Prometheus
// client libraries use), read from <proc-root>/self and <proc-root>/stat.
#pragma once

#include <cstdint>
#include <string_view>

#include "base/Result.h"
#include "controller/Paths.h"
#include "controller/operate/Status.h"

namespace reclaimd::controller {

// From /proc/self/stat: utime, stime and starttime in clock ticks, rss in pages.
struct SelfStat {
  std::uint64_t utime = 0, stime = 0, starttime = 0, rssPages = 0;
};
// The command name is in parentheses and may hold spaces and ')': fields are counted from the
// last ')'. Errors: Errc::Parse.
Result<SelfStat> parseSelfStat(std::string_view text);
// The soft limit of "Max open files" in /proc/self/limits ("unlimited": UINT64_MAX).
Result<std::uint64_t> parseMaxOpenFiles(std::string_view text);
// "btime" of /proc/stat: the boot time, Unix seconds.
Result<std::uint64_t> parseBootTime(std::string_view text);

// Reads them all; fds are counted in <proc-root>/self/fd.
Result<ProcessStatus> readProcessStatus(const Paths& paths);

}  // namespace reclaimd::controller

// The machine's /proc files, kept open and re-read with pread (opening a file allocates kernel
// memory, which is exactly what runs short under pressure): stat and meminfo from the start,
// vmstat on first use.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "base/Files.h"
#include "base/Result.h"
#include "proc/Meminfo.h"
#include "proc/ProcStat.h"
#include "proc/Vmstat.h"

namespace reclaimd::proc {

class Reader {
 public:
  // Opens <procRoot>/stat and <procRoot>/meminfo. Errors: the open errno, with the path.
  static Result<Reader> open(const std::string& procRoot);

  Result<CpuTimes> stat();
  Result<Meminfo> meminfo();
  // vmstat's workingset counters of file pages.
  Result<Workingset> workingset();

 private:
  Reader(std::string procRoot, KeptFile stat, KeptFile meminfo)
      : root_(std::move(procRoot)), stat_(std::move(stat)), meminfo_(std::move(meminfo)) {}
  std::string root_;
  KeptFile stat_, meminfo_;
  std::optional<KeptFile> vmstat_;
};

}  // namespace reclaimd::proc

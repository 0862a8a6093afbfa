#include "proc/Reader.h"

#include <fcntl.h>

#include "proc/Vmstat.h"

namespace reclaimd::proc {

Result<Reader> Reader::open(const std::string& procRoot) {
  auto stat = KeptFile::open(AT_FDCWD, procRoot + "/stat");
  if (!stat) return stat.error();
  auto meminfo = KeptFile::open(AT_FDCWD, procRoot + "/meminfo");
  if (!meminfo) return meminfo.error();
  return Reader(procRoot, std::move(*stat), std::move(*meminfo));
}

Result<CpuTimes> Reader::stat() {
  auto text = stat_.read();
  if (!text) return text.error();
  return parseProcStat(*text);
}

Result<Meminfo> Reader::meminfo() {
  auto text = meminfo_.read();
  if (!text) return text.error();
  return parseMeminfo(*text);
}

Result<Workingset> Reader::workingset() {
  if (!vmstat_) {
    auto opened = KeptFile::open(AT_FDCWD, root_ + "/vmstat");
    if (!opened) return opened.error();
    vmstat_ = std::move(*opened);
  }
  auto text = vmstat_->read();
  if (!text) return text.error();
  return parseWorkingset(*text);
}

}  // namespace reclaimd::proc

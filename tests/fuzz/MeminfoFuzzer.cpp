// /proc/meminfo: a parsed file keeps MemFree <= MemTotal (the parser promises it), holds whole
// kB, and prints back, kernel style, to the same figures.
#include <fmt/format.h>

#include "base/Quantities.h"
#include "proc/Meminfo.h"
#include "tests/fuzz/Check.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace reclaimd;
  auto m = proc::parseMeminfo(fuzz::asText(data, size));
  if (!m) return 0;
  FUZZ_CHECK(m->memFree <= m->memTotal, "MemFree is never above MemTotal");
  const std::uint64_t values[] = {m->memTotal,     m->memFree, m->activeFile, m->inactiveFile,
                                  m->sReclaimable, m->shmem,   m->swapTotal,  m->swapFree};
  for (std::uint64_t v : values)
    FUZZ_CHECK(v % kKiB == 0, "meminfo values are whole kB");
  // MemTotal:       16303412 kB
  const std::string printed = fmt::format(
      "MemTotal: {} kB\nMemFree: {} kB\nActive(file): {} kB\nInactive(file): {} kB\nSReclaimable: {} kB\n"
      "Shmem: {} kB\nSwapTotal: {} kB\nSwapFree: {} kB\n",
      m->memTotal / kKiB, m->memFree / kKiB, m->activeFile / kKiB, m->inactiveFile / kKiB, m->sReclaimable / kKiB,
      m->shmem / kKiB, m->swapTotal / kKiB, m->swapFree / kKiB);
  auto again = proc::parseMeminfo(printed);
  FUZZ_CHECK(again.ok(), "printed meminfo parses");
  FUZZ_CHECK(again->memTotal == m->memTotal && again->memFree == m->memFree && again->activeFile == m->activeFile &&
                 again->inactiveFile == m->inactiveFile && again->sReclaimable == m->sReclaimable &&
                 again->shmem == m->shmem && again->swapTotal == m->swapTotal && again->swapFree == m->swapFree,
             "printed meminfo parses to the same figures");
  return 0;
}

// A cgroup's cpu.stat: a parsed usage prints back to the same usage.
#include <string>

#include "cgroup/Stat.h"
#include "tests/fuzz/Check.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace reclaimd;
  auto s = cgroup::parseCpuStat(fuzz::asText(data, size));
  if (!s) return 0;
  // usage_usec 8734201
  auto again = cgroup::parseCpuStat("usage_usec " + std::to_string(s->usageUsec) + "\n");
  FUZZ_CHECK(again.ok() && again->usageUsec == s->usageUsec, "a printed cpu.stat parses to the same usage");
  return 0;
}

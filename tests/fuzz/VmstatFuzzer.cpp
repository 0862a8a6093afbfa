// /proc/vmstat's workingset counters: parsed values print back to the same values.
#include <fmt/format.h>

#include "proc/Vmstat.h"
#include "tests/fuzz/Check.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace reclaimd;
  auto w = proc::parseWorkingset(fuzz::asText(data, size));
  if (!w) return 0;
  // workingset_refault_file 12345
  auto again = proc::parseWorkingset(
      fmt::format("workingset_refault_file {}\nworkingset_activate_file {}\n", w->refaults, w->activations));
  FUZZ_CHECK(again.ok() && again->refaults == w->refaults && again->activations == w->activations,
             "printed workingset counters parse to the same values");
  return 0;
}

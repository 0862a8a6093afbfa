// /proc/vmstat's refault counter: a parsed value prints back to the same value.
#include <string>

#include "proc/Vmstat.h"
#include "tests/fuzz/Check.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace reclaimd;
  auto refaults = proc::parseRefaultFile(fuzz::asText(data, size));
  if (!refaults) return 0;
  // workingset_refault_file 12345
  auto again = proc::parseRefaultFile("workingset_refault_file " + std::to_string(*refaults) + "\n");
  FUZZ_CHECK(again.ok() && *again == *refaults, "a printed refault counter parses to the same value");
  return 0;
}

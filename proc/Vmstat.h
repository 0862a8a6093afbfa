// /proc/vmstat: the machine's workingset counters of file pages, for refault protection and the
// trimming law at the root.
#pragma once

#include <cstdint>
#include <string_view>

#include "base/Result.h"

namespace reclaimd::proc {

// Cumulative counts of file pages (pages):
//   workingset_refault_file 12345      read back soon after eviction (5.9+; "workingset_refault"
//                                      before, used as fallback)
//   workingset_activate_file 678       of those, put back among the pages the kernel keeps (5.9+;
//                                      "workingset_activate" before; 0 when neither is there)
struct Workingset {
  std::uint64_t refaults = 0;
  std::uint64_t activations = 0;
};

// Errors: Errc::Parse when no refault line is there or a value of either is malformed.
Result<Workingset> parseWorkingset(std::string_view vmstat);

}  // namespace reclaimd::proc

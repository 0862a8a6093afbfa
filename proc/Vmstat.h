// /proc/vmstat: the machine's workingset refault counter, for refault protection at the root.
#pragma once

#include <cstdint>
#include <string_view>

#include "base/Result.h"

namespace reclaimd::proc {

// The count of file pages refaulted (read back soon after eviction), cumulative:
//   workingset_refault_file 12345      (5.9+; "workingset_refault" before, used as fallback)
// Errors: Errc::Parse when neither line is there or the value is malformed.
Result<std::uint64_t> parseRefaultFile(std::string_view vmstat);

}  // namespace reclaimd::proc

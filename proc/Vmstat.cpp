#include "proc/Vmstat.h"

#include <optional>
#include <string>

#include "base/Text.h"
#include "base/Quantities.h"

namespace reclaimd::proc {

// workingset_refault_file 12345
Result<std::uint64_t> parseRefaultFile(std::string_view content) {
  std::optional<std::uint64_t> file, legacy;
  for (std::string_view line : lines(content)) {
    auto keyed = splitOnce(line, ' ');
    if (!keyed) continue;
    const std::string_view key = keyed->first;
    if (key != "workingset_refault_file" && key != "workingset_refault") continue;
    auto value = parseU64(keyed->second);
    if (!value) return parseError("/proc/vmstat: malformed line \"" + std::string(line) + "\"");
    (key == "workingset_refault_file" ? file : legacy) = *value;
  }
  if (file) return *file;
  if (legacy) return *legacy;
  return parseError("/proc/vmstat: no workingset_refault_file line");
}

}  // namespace reclaimd::proc

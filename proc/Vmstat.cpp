#include "proc/Vmstat.h"

#include <optional>
#include <string>

#include "base/Units.h"

namespace reclaimd::proc {

Result<std::uint64_t> parseRefaultFile(std::string_view content) {
  std::optional<std::uint64_t> file, legacy;
  while (!content.empty()) {
    const std::size_t newline = content.find('\n');
    const std::string_view line = content.substr(0, newline);
    content.remove_prefix(newline == std::string_view::npos ? content.size() : newline + 1);
    const std::size_t space = line.find(' ');
    if (space == std::string_view::npos) continue;
    const std::string_view key = line.substr(0, space);
    if (key != "workingset_refault_file" && key != "workingset_refault") continue;
    auto value = parseU64(line.substr(space + 1));
    if (!value) return parseError("/proc/vmstat: malformed line \"" + std::string(line) + "\"");
    (key == "workingset_refault_file" ? file : legacy) = *value;
  }
  if (file) return *file;
  if (legacy) return *legacy;
  return parseError("/proc/vmstat: no workingset_refault_file line");
}

}  // namespace reclaimd::proc

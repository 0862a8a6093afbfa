#include "proc/Meminfo.h"

#include <optional>

#include "base/Units.h"

namespace reclaimd::proc {

namespace {

// "  16303412 kB" -> bytes. The kernel prints kB for every size field.
std::optional<std::uint64_t> parseKb(std::string_view rest) {
  std::size_t begin = rest.find_first_not_of(' ');
  if (begin == std::string_view::npos) return std::nullopt;
  rest.remove_prefix(begin);
  std::size_t space = rest.find(' ');
  if (space == std::string_view::npos || rest.substr(space) != " kB") return std::nullopt;
  auto kb = parseU64(rest.substr(0, space));
  if (!kb || *kb > UINT64_MAX / kKiB) return std::nullopt;
  return *kb * kKiB;
}

}  // namespace

Result<Meminfo> parseMeminfo(std::string_view content) {
  Meminfo m;
  struct Field {
    std::string_view name;
    std::uint64_t* target;
    bool required;
    bool seen;
  };
  Field fields[] = {
      {"MemTotal", &m.memTotal, true, false},         {"MemFree", &m.memFree, true, false},
      {"Active(file)", &m.activeFile, true, false},   {"Inactive(file)", &m.inactiveFile, true, false},
      {"SReclaimable", &m.sReclaimable, true, false}, {"Shmem", &m.shmem, false, false},
      {"SwapTotal", &m.swapTotal, false, false},      {"SwapFree", &m.swapFree, false, false},
  };
  while (!content.empty()) {
    std::size_t newline = content.find('\n');
    std::string_view line = content.substr(0, newline);
    content.remove_prefix(newline == std::string_view::npos ? content.size() : newline + 1);
    std::size_t colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    std::string_view name = line.substr(0, colon);
    for (auto& field : fields) {
      if (field.name != name) continue;
      auto bytes = parseKb(line.substr(colon + 1));
      if (!bytes)
        return parseError("/proc/meminfo: malformed " + std::string(name) + " line: \"" + std::string(line) + "\"");
      *field.target = *bytes;
      field.seen = true;
    }
  }
  for (const auto& field : fields) {
    if (field.required && !field.seen) return parseError("/proc/meminfo: missing " + std::string(field.name));
  }
  if (m.memFree > m.memTotal) return parseError("/proc/meminfo: MemFree is larger than MemTotal");
  return m;
}

}  // namespace reclaimd::proc

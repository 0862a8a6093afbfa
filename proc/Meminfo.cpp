#include "proc/Meminfo.h"

#include <optional>

#include "base/Checked.h"
#include "base/Text.h"
#include "base/Quantities.h"

namespace reclaimd::proc {

namespace {

// "  16303412 kB" -> bytes. The kernel prints kB for every size field.
std::optional<std::uint64_t> parseKb(std::string_view rest) {
  std::size_t begin = rest.find_first_not_of(' ');
  if (begin == std::string_view::npos) return std::nullopt;
  auto number = splitOnce(rest.substr(begin), ' ');
  if (!number || number->second != "kB") return std::nullopt;
  auto kb = parseU64(number->first);
  if (!kb) return std::nullopt;
  return checkedMul(*kb, kKiB);
}

}  // namespace

// MemTotal:       16303412 kB
// Active(file):    2817064 kB
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
  for (std::string_view line : lines(content)) {
    auto named = splitOnce(line, ':');
    if (!named) continue;
    for (auto& field : fields) {
      if (field.name != named->first) continue;
      auto bytes = parseKb(named->second);
      if (!bytes) {
        return parseError("/proc/meminfo: malformed " + std::string(named->first) + " line: \"" + std::string(line) +
                          "\"");
      }
      *field.target = *bytes;
      field.seen = true;
    }
  }
  for (const auto& field : fields) {
    if (field.required && !field.seen) return parseError("/proc/meminfo: missing " + std::string(field.name));
  }
  if (m.memFree > m.memTotal) return parseError("/proc/meminfo: MemFree is larger than MemTotal");
  // fileCache() and reclaimable() add these: a parsed Meminfo never makes them wrap.
  if (!checkedSum({m.activeFile, m.inactiveFile, m.sReclaimable})) {
    return errnoError(EOVERFLOW, "/proc/meminfo: Active(file) + Inactive(file) + SReclaimable overflows");
  }
  return m;
}

}  // namespace reclaimd::proc

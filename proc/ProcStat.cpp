#include "proc/ProcStat.h"

#include <array>

#include "base/Units.h"

namespace reclaimd::proc {

Result<CpuTimes> parseProcStat(std::string_view content) {
  constexpr std::string_view kPrefix = "cpu ";
  if (content.substr(0, kPrefix.size()) != kPrefix) {
    return parseError("/proc/stat: first line is not the aggregate \"cpu\" line");
  }
  auto newline = content.find('\n');
  if (newline == std::string_view::npos) return parseError("/proc/stat: cpu line is truncated (no newline)");
  std::string_view line = content.substr(kPrefix.size(), newline - kPrefix.size());

  std::array<std::uint64_t, 8> fields{};
  std::size_t count = 0;
  std::size_t pos = 0;
  while (pos < line.size()) {
    if (line[pos] == ' ' || line[pos] == '\t') {
      ++pos;
      continue;
    }
    std::size_t end = line.find_first_of(" \t", pos);
    if (end == std::string_view::npos) end = line.size();
    auto value = parseU64(line.substr(pos, end - pos));
    if (!value) {
      return parseError("/proc/stat: cpu field " + std::to_string(count + 1) + " is not a number: \"" +
                        std::string(line.substr(pos, end - pos)) + "\"");
    }
    if (count < fields.size()) fields[count] = *value;  // guest, guest_nice: inside user/nice
    ++count;
    pos = end;
  }
  if (count < 4) return parseError("/proc/stat: cpu line has " + std::to_string(count) + " fields, need at least 4");

  CpuTimes t;
  t.user = fields[0];
  t.nice = fields[1];
  t.system = fields[2];
  t.idle = fields[3];
  t.iowait = fields[4];
  t.irq = fields[5];
  t.softirq = fields[6];
  t.steal = fields[7];
  return t;
}

}  // namespace reclaimd::proc

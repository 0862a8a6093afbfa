#include "cgroup/Stat.h"

#include <string>

#include "base/Units.h"

namespace reclaimd::cgroup {

namespace {

struct Field {
  std::string_view name;
  std::uint64_t* target;
  bool required;
  bool seen = false;
};

// Reads "key value\n" lines into the named fields; unknown keys are skipped because every
// kernel adds some.
template <std::size_t N>
Result<void> parseFlatKeyed(std::string_view content, Field (&fields)[N], const char* file) {
  while (!content.empty()) {
    std::size_t newline = content.find('\n');
    std::string_view line = content.substr(0, newline);
    content.remove_prefix(newline == std::string_view::npos ? content.size() : newline + 1);
    if (line.empty()) continue;
    std::size_t space = line.find(' ');
    if (space == std::string_view::npos) {
      return parseError(std::string(file) + ": malformed line \"" + std::string(line) + "\"");
    }
    std::string_view key = line.substr(0, space);
    for (auto& field : fields) {
      if (field.name != key) continue;
      auto value = parseU64(line.substr(space + 1));
      if (!value) return parseError(std::string(file) + ": malformed line \"" + std::string(line) + "\"");
      *field.target = *value;
      field.seen = true;
    }
  }
  for (const auto& field : fields) {
    if (field.required && !field.seen) return parseError(std::string(file) + ": missing " + std::string(field.name));
  }
  return {};
}

}  // namespace

Result<MemoryStat> parseMemoryStat(std::string_view content) {
  MemoryStat s;
  Field fields[] = {
      {"anon", &s.anon, false},
      {"file", &s.file, false},
      {"active_file", &s.activeFile, true},
      {"inactive_file", &s.inactiveFile, true},
      {"shmem", &s.shmem, false},
      {"slab_reclaimable", &s.slabReclaimable, false},
      {"workingset_refault_file", &s.workingsetRefaultFile, false},
  };
  auto parsed = parseFlatKeyed(content, fields, "memory.stat");
  if (!parsed) return parsed.error();
  return s;
}

Result<CpuStat> parseCpuStat(std::string_view content) {
  CpuStat s;
  Field fields[] = {{"usage_usec", &s.usageUsec, true}};
  auto parsed = parseFlatKeyed(content, fields, "cpu.stat");
  if (!parsed) return parsed.error();
  return s;
}

}  // namespace reclaimd::cgroup

#include "cgroup/Stat.h"

#include <string>

#include "base/Checked.h"
#include "base/Text.h"
#include "base/Quantities.h"

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
  for (std::string_view line : lines(content)) {
    if (line.empty()) continue;
    auto keyed = splitOnce(line, ' ');
    if (!keyed) return parseError(std::string(file) + ": malformed line \"" + std::string(line) + "\"");
    for (auto& field : fields) {
      if (field.name != keyed->first) continue;
      auto value = parseU64(keyed->second);
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

// active_file 104857600
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
      {"workingset_activate_file", &s.workingsetActivateFile, false},
  };
  auto parsed = parseFlatKeyed(content, fields, "memory.stat");
  if (!parsed) return parsed.error();
  // fileCache() adds these: a parsed MemoryStat never makes it wrap.
  if (!checkedAdd(s.activeFile, s.inactiveFile)) {
    return errnoError(EOVERFLOW, "memory.stat: active_file + inactive_file overflows");
  }
  return s;
}

// usage_usec 8734201
Result<CpuStat> parseCpuStat(std::string_view content) {
  CpuStat s;
  Field fields[] = {{"usage_usec", &s.usageUsec, true}};
  auto parsed = parseFlatKeyed(content, fields, "cpu.stat");
  if (!parsed) return parsed.error();
  return s;
}

Result<std::chrono::nanoseconds> CpuStat::usage() const {
  return checkedNanoseconds(usageUsec, std::chrono::microseconds(1), "cpu.stat usage_usec");
}

}  // namespace reclaimd::cgroup

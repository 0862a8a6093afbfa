#include "proc/ProcStat.h"

#include <array>
#include <string>

#include "base/Checked.h"
#include "base/Text.h"
#include "base/Quantities.h"

namespace reclaimd::proc {

namespace {
// The per-CPU lines ("cpu0 ...", "cpu1 ...") right after the aggregate one.
unsigned countCpuLines(std::string_view rest) {
  unsigned count = 0;
  while (rest.size() > 3 && rest.substr(0, 3) == "cpu" && rest[3] >= '0' && rest[3] <= '9') {
    ++count;
    const auto newline = rest.find('\n');
    if (newline == std::string_view::npos) break;
    rest.remove_prefix(newline + 1);
  }
  return count;
}
}  // namespace

// cpu  10132153 290696 3084719 46828483 16683 0 25195 0 175628 0
Result<CpuTimes> parseProcStat(std::string_view content) {
  constexpr std::string_view kPrefix = "cpu ";
  if (content.substr(0, kPrefix.size()) != kPrefix) {
    return parseError("/proc/stat: first line is not the aggregate \"cpu\" line");
  }
  auto newline = content.find('\n');
  if (newline == std::string_view::npos) return parseError("/proc/stat: cpu line is truncated (no newline)");
  std::string_view line = content.substr(kPrefix.size(), newline - kPrefix.size());

  std::array<std::uint64_t, 8> values{};
  std::size_t count = 0;
  for (std::string_view field : fields(line)) {
    auto value = parseU64(field);
    if (!value) {
      return parseError("/proc/stat: cpu field " + std::to_string(count + 1) + " is not a number: \"" +
                        std::string(field) + "\"");
    }
    if (count < values.size()) values[count] = *value;  // guest, guest_nice: inside user/nice
    ++count;
  }
  if (count < 4) return parseError("/proc/stat: cpu line has " + std::to_string(count) + " fields, need at least 4");

  CpuTimes t;
  t.user = values[0];
  t.nice = values[1];
  t.system = values[2];
  t.idle = values[3];
  t.iowait = values[4];
  t.irq = values[5];
  t.softirq = values[6];
  t.steal = values[7];
  // busy(), idleAll() and total() add these: a parsed CpuTimes never makes them wrap.
  if (!checkedSum({t.user, t.nice, t.system, t.idle, t.iowait, t.irq, t.softirq, t.steal})) {
    return errnoError(EOVERFLOW, "/proc/stat: the cpu line's ticks add up to more than 2^64");
  }
  t.cpus = countCpuLines(content.substr(newline + 1));
  return t;
}

Result<CpuTime> cpuTime(const CpuTimes& times, std::chrono::nanoseconds tick) {
  auto busy = checkedSum({times.user, times.nice, times.system, times.irq, times.softirq, times.steal});
  auto idle = checkedAdd(times.idle, times.iowait);
  auto total = busy && idle ? checkedAdd(*busy, *idle) : std::nullopt;
  if (!total) return errnoError(EOVERFLOW, "/proc/stat: the cpu line's ticks add up to more than 2^64");
  auto busyNs = checkedNanoseconds(*busy, tick, "/proc/stat busy ticks");
  if (!busyNs) return busyNs.error();
  auto totalNs = checkedNanoseconds(*total, tick, "/proc/stat total ticks");
  if (!totalNs) return totalNs.error();
  return CpuTime{*busyNs, *totalNs, times.cpus};
}

}  // namespace reclaimd::proc

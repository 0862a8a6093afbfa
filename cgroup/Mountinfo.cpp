#include "cgroup/Mountinfo.h"

#include "base/Text.h"

namespace reclaimd::cgroup {

namespace {

// mountinfo escapes space, tab, newline and backslash as \ooo octal.
std::string unescape(std::string_view field) {
  std::string out;
  out.reserve(field.size());
  for (std::size_t i = 0; i < field.size(); ++i) {
    auto isOct = [](char c) { return c >= '0' && c <= '7'; };
    if (field[i] == '\\' && i + 3 < field.size() && isOct(field[i + 1]) && isOct(field[i + 2]) && isOct(field[i + 3])) {
      out.push_back(static_cast<char>((field[i + 1] - '0') * 64 + (field[i + 2] - '0') * 8 + (field[i + 3] - '0')));
      i += 3;
      continue;
    }
    out.push_back(field[i]);
  }
  return out;
}

}  // namespace

// 36 35 98:0 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:9 - cgroup2 cgroup2 rw
Result<std::vector<MountEntry>> parseMountinfo(std::string_view content) {
  std::vector<MountEntry> mounts;
  std::size_t lineNo = 0;
  for (std::string_view line : lines(content)) {
    ++lineNo;
    if (line.empty()) continue;
    // mountinfo escapes blanks inside fields (\040), so a space always separates two.
    const Split split = fields(line, " ");
    const std::vector<std::string_view> parts(split.begin(), split.end());
    // id parent major:minor root mountpoint options [optional...] - fstype source superopts
    std::size_t dash = 0;
    for (std::size_t i = 6; i < parts.size(); ++i) {
      if (parts[i] == "-") {
        dash = i;
        break;
      }
    }
    if (dash == 0 || dash + 1 >= parts.size()) {
      return parseError("mountinfo line " + std::to_string(lineNo) + " is malformed: \"" + std::string(line) + "\"");
    }
    MountEntry entry;
    entry.device = std::string(parts[2]);
    entry.root = unescape(parts[3]);
    entry.mountPoint = unescape(parts[4]);
    entry.fsType = std::string(parts[dash + 1]);
    entry.source = dash + 2 < parts.size() ? unescape(parts[dash + 2]) : std::string();
    mounts.push_back(std::move(entry));
  }
  return mounts;
}

std::optional<MountEntry> findCgroup2(const std::vector<MountEntry>& mounts) {
  std::optional<MountEntry> first;
  for (const auto& m : mounts) {
    if (m.fsType != "cgroup2" || m.root != "/") continue;
    if (m.mountPoint == "/sys/fs/cgroup") return m;
    if (!first) first = m;
  }
  return first;
}

// 0::/system.slice/cron.service
std::optional<std::string> parseProcCgroup(std::string_view content) {
  for (std::string_view line : lines(content)) {
    if (line.substr(0, 3) != "0::") continue;
    std::string_view path = line.substr(3);
    if (path.empty() || path.front() != '/') return std::nullopt;
    path.remove_prefix(1);
    return std::string(path);
  }
  return std::nullopt;
}

}  // namespace reclaimd::cgroup

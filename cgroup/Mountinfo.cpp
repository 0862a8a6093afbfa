#include "cgroup/Mountinfo.h"

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

std::vector<std::string_view> splitSpaces(std::string_view line) {
  std::vector<std::string_view> out;
  std::size_t pos = 0;
  while (pos < line.size()) {
    std::size_t begin = line.find_first_not_of(' ', pos);
    if (begin == std::string_view::npos) break;
    std::size_t end = line.find(' ', begin);
    if (end == std::string_view::npos) end = line.size();
    out.push_back(line.substr(begin, end - begin));
    pos = end;
  }
  return out;
}

}  // namespace

Result<std::vector<MountEntry>> parseMountinfo(std::string_view content) {
  std::vector<MountEntry> mounts;
  std::size_t lineNo = 0;
  while (!content.empty()) {
    std::size_t newline = content.find('\n');
    std::string_view line = content.substr(0, newline);
    content.remove_prefix(newline == std::string_view::npos ? content.size() : newline + 1);
    ++lineNo;
    if (line.empty()) continue;
    auto fields = splitSpaces(line);
    // id parent major:minor root mountpoint options [optional...] - fstype source superopts
    std::size_t dash = 0;
    for (std::size_t i = 6; i < fields.size(); ++i) {
      if (fields[i] == "-") {
        dash = i;
        break;
      }
    }
    if (dash == 0 || dash + 1 >= fields.size()) {
      return parseError("mountinfo line " + std::to_string(lineNo) + " is malformed: \"" + std::string(line) + "\"");
    }
    MountEntry entry;
    entry.root = unescape(fields[3]);
    entry.mountPoint = unescape(fields[4]);
    entry.fsType = std::string(fields[dash + 1]);
    entry.source = dash + 2 < fields.size() ? unescape(fields[dash + 2]) : std::string();
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

std::optional<std::string> parseProcCgroup(std::string_view content) {
  while (!content.empty()) {
    std::size_t newline = content.find('\n');
    std::string_view line = content.substr(0, newline);
    content.remove_prefix(newline == std::string_view::npos ? content.size() : newline + 1);
    if (line.substr(0, 3) != "0::") continue;
    std::string_view path = line.substr(3);
    if (path.empty() || path.front() != '/') return std::nullopt;
    path.remove_prefix(1);
    return std::string(path);
  }
  return std::nullopt;
}

}  // namespace reclaimd::cgroup

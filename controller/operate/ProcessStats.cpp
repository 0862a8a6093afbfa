#include "controller/operate/ProcessStats.h"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <limits>

#include "base/Files.h"
#include "base/Quantities.h"

namespace reclaimd::controller {

namespace {

// The whitespace-separated words of `text`.
std::vector<std::string_view> words(std::string_view text) {
  std::vector<std::string_view> out;
  std::size_t pos = 0;
  while (pos < text.size()) {
    pos = text.find_first_not_of(" \t\n", pos);
    if (pos == std::string_view::npos) break;
    std::size_t end = text.find_first_of(" \t\n", pos);
    if (end == std::string_view::npos) end = text.size();
    out.push_back(text.substr(pos, end - pos));
    pos = end;
  }
  return out;
}

Result<std::uint64_t> countFds(const std::string& dir) {
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return errnoError(errno, "opendir " + dir);
  // The fd reading the directory shows up in its own listing: it is not counted.
  const std::string own = std::to_string(::dirfd(d));
  std::uint64_t n = 0;
  while (const dirent* e = ::readdir(d)) {
    if (e->d_name[0] != '.' && own != e->d_name) ++n;
  }
  ::closedir(d);
  return n;
}

}  // namespace

Result<SelfStat> parseSelfStat(std::string_view text) {
  const std::size_t paren = text.rfind(')');
  if (paren == std::string_view::npos) return parseError("/proc/self/stat: no command name");
  // After ")": state is field 3; utime 14, stime 15, starttime 22, rss 24 (proc(5)).
  const auto w = words(text.substr(paren + 1));
  if (w.size() < 22) return parseError("/proc/self/stat: too few fields");
  auto at = [&](std::size_t field) { return parseU64(w[field - 3]); };
  auto utime = at(14), stime = at(15), start = at(22), rss = at(24);
  if (!utime || !stime || !start || !rss) return parseError("/proc/self/stat: a field is not a number");
  return SelfStat{*utime, *stime, *start, *rss};
}

Result<std::uint64_t> parseMaxOpenFiles(std::string_view text) {
  constexpr std::string_view kKey = "Max open files";
  for (std::size_t pos = 0; pos < text.size();) {
    std::size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    if (line.rfind(kKey, 0) != 0) continue;
    const auto w = words(line.substr(kKey.size()));
    if (w.empty()) break;
    if (w[0] == "unlimited") return std::numeric_limits<std::uint64_t>::max();
    if (auto v = parseU64(w[0])) return *v;
    return parseError("/proc/self/limits: malformed line \"" + std::string(line) + "\"");
  }
  return parseError("/proc/self/limits: no \"Max open files\" soft limit");
}

Result<std::uint64_t> parseBootTime(std::string_view text) {
  for (std::size_t pos = 0; pos < text.size();) {
    std::size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    if (line.rfind("btime ", 0) != 0) continue;
    if (auto v = parseU64(line.substr(6))) return *v;
    return parseError("/proc/stat: malformed line \"" + std::string(line) + "\"");
  }
  return parseError("/proc/stat: no btime line");
}

Result<ProcessStatus> readProcessStatus(const Paths& paths) {
  auto statText = readFileAt(AT_FDCWD, paths.proc("self/stat"));
  if (!statText) return statText.error();
  auto self = parseSelfStat(*statText);
  if (!self) return self.error();
  auto limitsText = readFileAt(AT_FDCWD, paths.proc("self/limits"));
  if (!limitsText) return limitsText.error();
  auto maxFds = parseMaxOpenFiles(*limitsText);
  if (!maxFds) return maxFds.error();
  auto procStat = readFileAt(AT_FDCWD, paths.proc(kProcStat));
  if (!procStat) return procStat.error();
  auto boot = parseBootTime(*procStat);
  if (!boot) return boot.error();
  auto fds = countFds(paths.proc("self/fd"));
  if (!fds) return fds.error();
  const double hz = static_cast<double>(std::max(1L, ::sysconf(_SC_CLK_TCK)));
  const auto page = static_cast<std::uint64_t>(std::max(1L, ::sysconf(_SC_PAGESIZE)));
  ProcessStatus p;
  p.cpuSeconds = static_cast<double>(self->utime + self->stime) / hz;
  p.residentBytes = self->rssPages * page;
  p.openFds = *fds;
  p.maxFds = *maxFds;
  p.startTimeSeconds = static_cast<double>(*boot) + static_cast<double>(self->starttime) / hz;
  return p;
}

}  // namespace reclaimd::controller

#include "controller/KernelAccess.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "access/Filesystems.h"
#include "access/Watch.h"
#include "base/Files.h"
#include "base/Result.h"
#include "cgroup/Mountinfo.h"

namespace reclaimd::controller {

namespace {

// A module parameter longer than this (DAMON_STAT's percentile lists) is cut: the probe says
// what is there, it is not a dump.
constexpr std::size_t kMaxValue = 256;
// The parameters the text form shows: whether the module runs and what decides when it acts.
constexpr std::array<const char*, 10> kReclaimShown = {
    "enabled",    "kdamond_pid", "min_age",  "quota_sz", "quota_ms", "wmarks_metric",
    "wmarks_high", "wmarks_mid", "wmarks_low", "bytes_reclaimed_regions"};

std::string trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  if (s.size() > kMaxValue) s = s.substr(0, kMaxValue) + "...";
  return s;
}

bool exists(const std::string& path) {
  struct stat st{};
  return ::stat(path.c_str(), &st) == 0;
}

DamonModule readModule(const std::string& dir) {
  DamonModule m;
  DIR* d = ::opendir(dir.c_str());
  if (!d) {
    const int err = errno;
    m.present = err != ENOENT;
    if (m.present) m.problem = errnoError(err, dir).message();
    return m;
  }
  m.present = true;
  while (const dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    auto text = readFileAt(AT_FDCWD, dir + "/" + name);
    m.parameters.emplace_back(name, text ? trimmed(*text) : "unreadable: " + text.error().message());
  }
  ::closedir(d);
  std::sort(m.parameters.begin(), m.parameters.end());
  return m;
}

void readLru(const std::string& path, KernelAccess& a) {
  auto text = readFileAt(AT_FDCWD, path);
  if (!text) {
    if (text.error().code != std::error_code(ENOENT, std::generic_category())) {
      a.lruProblem = text.error().message();
    }
    return;
  }
  a.lruGenEnabled = trimmed(*text);
  char* end = nullptr;
  errno = 0;
  const unsigned long bits = std::strtoul(a.lruGenEnabled.c_str(), &end, 0);
  if (a.lruGenEnabled.empty() || errno != 0 || *end != '\0') {
    a.lruProblem = path + ": not a number: \"" + a.lruGenEnabled + "\"";
    return;
  }
  a.multiGen = bits != 0;
}

std::string lruKind(const KernelAccess& a) {
  if (!a.lruProblem.empty()) return "unknown";
  return a.multiGen ? "multi-gen" : "classic";
}

std::string moduleLine(const DamonModule& m, const char* name, const std::vector<std::string>& shown) {
  if (!m.problem.empty()) return "unreadable (" + m.problem + ")";
  if (!m.present) return std::string("not in this kernel (no /sys/module/") + name + ")";
  std::string out;
  for (const std::string& key : shown) {
    const auto it = std::find_if(m.parameters.begin(), m.parameters.end(),
                                 [&](const auto& p) { return p.first == key; });
    if (it == m.parameters.end()) continue;
    out += (out.empty() ? "" : " ") + key + "=" + it->second;
  }
  return out.empty() ? "present, no parameters readable" : out;
}

nlohmann::json moduleJson(const DamonModule& m) {
  nlohmann::json params = nlohmann::json::object();
  for (const auto& [k, v] : m.parameters) params[k] = v;
  nlohmann::json out{{"present", m.present}, {"parameters", params}};
  if (!m.problem.empty()) out["problem"] = m.problem;
  return out;
}

std::string joined(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& item : items) out += (out.empty() ? "" : ", ") + item;
  return out;
}

std::string filesLine(const FileAccess& f) {
  std::string out = "no";
  if (f.available())
    out = "fanotify on " + joined(f.watched);
  else if (!f.problem.empty())
    out = "no (" + f.problem + ")";
  if (!f.refused.empty()) out += "; refused: " + joined(f.refused);
  return out;
}

nlohmann::json filesJson(const FileAccess& f) {
  nlohmann::json out{{"available", f.available()}, {"watched", f.watched}, {"refused", f.refused}};
  if (!f.problem.empty()) out["problem"] = f.problem;
  return out;
}

}  // namespace

std::optional<Event> lruAdvice(const KernelAccess& access) {
  if (access.lruGenEnabled.empty() || !access.lruProblem.empty() || access.multiGen) return std::nullopt;
  return Event(Severity::Info, "lru_classic")
      .add("lru_gen_enabled", access.lruGenEnabled)
      .add("advice", std::string("trimming a busy machine stalls its work for some milliseconds once per hot set on "
                                 "the classic LRU; the multi-gen LRU, built in but off, does not: echo y > /sys/") +
                         kLruGenEnabled);
}

std::string DamonModule::get(const std::string& name) const {
  for (const auto& [k, v] : parameters) {
    if (k == name) return v;
  }
  return {};
}

KernelAccess probeLru(const std::string& sysRoot) {
  KernelAccess a;
  readLru(sysRoot + "/" + kLruGenEnabled, a);
  return a;
}

KernelAccess probeAccess(const std::string& sysRoot) {
  KernelAccess a = probeLru(sysRoot);
  a.damon = exists(sysRoot + "/" + kDamonAdmin);
  a.damonReclaim = readModule(sysRoot + "/" + kDamonReclaimParams);
  a.damonStat = readModule(sysRoot + "/" + kDamonStatParams);
  return a;
}

FileAccess probeFiles(const std::string& mountinfoPath) {
  FileAccess f;
  auto table = readFileAt(AT_FDCWD, mountinfoPath);
  if (!table) {
    f.problem = table.error().message();
    return f;
  }
  auto mounts = cgroup::parseMountinfo(*table);
  if (!mounts) {
    f.problem = mounts.error().message();
    return f;
  }
  const auto filesystems = access::filesystemsToWatch(*mounts);
  if (filesystems.empty()) {
    f.problem = "no filesystem on a block device is mounted";
    return f;
  }
  auto watch = access::Watch::open();
  if (!watch) {
    f.problem = watch.error().message();
    if (watch.error().code == std::errc::operation_not_permitted && ::geteuid() != 0) f.problem += "; run as root";
    return f;
  }
  for (const auto& fs : filesystems) {
    const std::string name = fs.fsType + " " + fs.mountPoint + " (" + fs.device + ")";
    if (auto marked = watch->watch(fs.mountPoint))
      f.watched.push_back(name);
    else
      f.refused.push_back(name + ": " + marked.error().message());
  }
  return f;
}

// Where the value came from goes in brackets, so a reader can check it by hand.
std::string describeAccess(const KernelAccess& a) {
  const std::string lruGen = std::string("/sys/") + kLruGenEnabled;
  std::string lru = "lru: " + lruKind(a);
  if (!a.lruProblem.empty()) {
    lru += " (" + a.lruProblem + ")";
  } else if (a.lruGenEnabled.empty()) {
    lru += " (no MGLRU in this kernel: no " + lruGen + ")";
  } else {
    // Built but off is Debian 12's 6.1: the administrator's switch, which the README weighs.
    lru += " (" + lruGen + " " + a.lruGenEnabled +
           (a.multiGen ? ")" : ": built, off; `echo y > " + lruGen + "` switches it on)");
  }
  std::string out = lru + "\n";
  out += std::string("damon: ") + (a.damon ? "yes (/sys/kernel/mm/damon/admin)" : "no");
  // With MGLRU on, folio_mark_accessed() counts a read() in the generation's references and
  // returns before clearing the idle flag, which is all DAMON checks of a page no process maps.
  if (a.damon && a.multiGen) out += "; with MGLRU on it sees accesses through mappings only, not read()";
  out += "\n";
  const std::vector<std::string> reclaimKeys(kReclaimShown.begin(), kReclaimShown.end());
  out += "damon_reclaim: " + moduleLine(a.damonReclaim, "damon_reclaim", reclaimKeys) + "\n";
  out += "damon_stat: " + moduleLine(a.damonStat, "damon_stat", {"enabled"});
  if (a.damonStat.get("enabled") == "Y" && a.damonReclaim.present) {
    out += " (DAMON_RECLAIM stays off while it runs: switch it off first)";
  }
  out += "\nfile_access: " + filesLine(a.files);
  out += "\naccess_used: refaults and activations (workingset_refault_file, workingset_activate_file) and "
         "pressure (PSI); not MGLRU's generations, not DAMON's regions\n";
  return out;
}

nlohmann::json accessJson(const KernelAccess& a) {
  nlohmann::json out{
      {"lru", lruKind(a)},
      {"lru_gen_enabled", a.lruGenEnabled.empty() ? nlohmann::json(nullptr) : nlohmann::json(a.lruGenEnabled)},
      {"damon", a.damon},
      {"damon_sees_read", a.damon ? nlohmann::json(!a.multiGen) : nlohmann::json(nullptr)},
      {"damon_reclaim", moduleJson(a.damonReclaim)},
      {"damon_stat", moduleJson(a.damonStat)},
      {"file_access", filesJson(a.files)},
      {"used", {"workingset_refault_file", "workingset_activate_file", "psi"}}};
  if (!a.lruProblem.empty()) out["lru_problem"] = a.lruProblem;
  return out;
}

}  // namespace reclaimd::controller

// What the kernel knows about which pages are in use, for `reclaimd probe`: the LRU's kind
// (MGLRU's generations or the classic two lists) and DAMON with its reclaim and statistics
// modules. reclaimd itself judges what is cold by refaults and pressure; this says what else a
// machine offers, and what a user would meet switching DAMON_RECLAIM on instead.
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/Event.h"

namespace reclaimd::controller {

// Files under the sysfs root, relative to it.
inline constexpr const char* kLruGenEnabled = "kernel/mm/lru_gen/enabled";
inline constexpr const char* kDamonAdmin = "kernel/mm/damon/admin";
inline constexpr const char* kDamonReclaimParams = "module/damon_reclaim/parameters";
inline constexpr const char* kDamonStatParams = "module/damon_stat/parameters";

// A DAMON module's parameters (/sys/module/<name>/parameters), as read.
struct DamonModule {
  bool present = false;                                         // its parameters directory exists
  std::vector<std::pair<std::string, std::string>> parameters;  // name, value; sorted by name
  std::string problem;                                          // why it could not be read

  // The named parameter's value, or empty.
  std::string get(const std::string& name) const;
};

// fanotify's word on which files are in use: whether this process can watch the machine's
// filesystems for opens, reads and writes, and which it could mark.
struct FileAccess {
  std::vector<std::string> watched;  // "ext4 / (254:0)"
  std::vector<std::string> refused;  // "btrfs /srv (0:45): fanotify_mark /srv: ..."
  std::string problem;               // why there is no group, or no filesystem to mark

  // A group was made and at least one filesystem marked.
  bool available() const { return !watched.empty(); }
};

struct KernelAccess {
  std::string lruGenEnabled;  // lru_gen/enabled as read ("0x0007"); empty when the file is absent
  bool multiGen = false;      // MGLRU built and on (a value other than 0)
  std::string lruProblem;     // the file is there but unreadable or not a number
  bool damon = false;         // DAMON's sysfs interface (kernel/mm/damon/admin) exists
  DamonModule damonReclaim;
  DamonModule damonStat;
  FileAccess files;  // filled by probeFiles
};

// Reads the access information under the sysfs root `sysRoot` ("/sys"). Never fails: what is
// absent is reported absent, what is unreadable says why.
KernelAccess probeAccess(const std::string& sysRoot);
// Tries fanotify on the block-backed filesystems of the mount table at `mountinfoPath`: a group
// is made and marked, then closed. Never fails: what cannot be had says why.
FileAccess probeFiles(const std::string& mountinfoPath);
// The LRU's part of it alone (lru_gen/enabled), for the daemon's start: no DAMON module read.
KernelAccess probeLru(const std::string& sysRoot);

// The start's word on the LRU for a daemon that may trim (event lru_classic), where the kernel
// has the multi-gen LRU built in but off (Debian 12's 6.1 boots so); nothing elsewhere. On the
// classic LRU, trimming a busy machine stalls its work for some milliseconds once per hot set:
// that LRU gives up files read before the cache first, and no probe size or pacing measured
// avoids it (docs/design.md, Trimming); the multi-gen LRU does not. Said once, with the switch,
// as systemd-oomd says so of a machine without swap; the choice stays the administrator's.
std::optional<Event> lruAdvice(const KernelAccess& access);

// The "key: value" lines of `reclaimd probe`.
std::string describeAccess(const KernelAccess& access);

// The same as `probe --json`'s "kernel_access" object.
nlohmann::json accessJson(const KernelAccess& access);

}  // namespace reclaimd::controller

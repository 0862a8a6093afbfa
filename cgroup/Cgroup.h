// One cgroup's files, kept open for as long as reclaimd tracks the cgroup: its directory,
// memory.stat and cpu.stat (re-read with pread), memory.reclaim (opened on first use).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "base/Files.h"
#include "base/UniqueFd.h"
#include "cgroup/Reclaim.h"
#include "cgroup/Stat.h"

namespace reclaimd::cgroup {

class Cgroup {
 public:
  // Opens cgroup `path` (relative, "" for the root) below `rootFd` without following
  // symlinks. Errors: the open errno (ENOENT/ENODEV: gone).
  static Result<Cgroup> open(int rootFd, std::string path);

  const std::string& path() const { return path_; }
  // "/" for the root, else the relative path: how cgroups are named in logs.
  std::string label() const { return path_.empty() ? "/" : path_; }
  std::uint64_t inode() const { return inode_; }
  int dirFd() const { return dir_.get(); }

  // Errors: read errno (ENOENT/ENODEV when the cgroup was removed) or Errc::Parse.
  Result<MemoryStat> memoryStat();
  Result<CpuStat> cpuStat();
  // memory.reclaim, opened on first use. Errors: the open errno.
  Result<ReclaimFile*> reclaimFile();

 private:
  Cgroup(UniqueFd dir, std::string path, std::uint64_t inode)
      : dir_(std::move(dir)), path_(std::move(path)), inode_(inode) {}
  Result<std::string_view> readKept(std::optional<KeptFile>& file, const char* name);

  UniqueFd dir_;
  std::string path_;
  std::uint64_t inode_ = 0;
  std::optional<KeptFile> memoryStat_, cpuStat_;
  std::optional<ReclaimFile> reclaim_;
};

// True for the errnos that mean "this cgroup was removed": skip it quietly.
bool cgroupGone(const Error& error);

}  // namespace reclaimd::cgroup

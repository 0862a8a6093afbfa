// One cgroup's files. Kept open for as long as reclaimd tracks the cgroup: its directory and
// memory.stat (read every tick, re-read with pread), so two fds per target; cpu.stat only once
// asked for (targets whose idle source is the cgroup's own CPU). memory.reclaim is opened for
// a step and closed after it (openReclaim): steps are seconds apart at most once per target,
// and a thousand targets holding it open were a thousand fds.
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

  // Errors: the open or read errno (ENOENT/ENODEV when the cgroup was removed),
  // Errc::Refused (not a regular file), Errc::Parse or EOVERFLOW from the parser.
  Result<MemoryStat> memoryStat();
  // cpu.stat, opened on first use and kept. Errors: as memoryStat.
  Result<CpuStat> cpuStat();
  // memory.reclaim, opened for a write and closed after it (kept open, a tree of thousands of
  // targets would hold an fd each). Errors: the open errno (ENOENT/ENODEV: gone), Errc::Refused
  // (a symlink or FIFO planted as memory.reclaim).
  Result<ReclaimFile> openReclaim() const;

 private:
  Cgroup(UniqueFd dir, std::string path, std::uint64_t inode)
      : dir_(std::move(dir)), path_(std::move(path)), inode_(inode) {}
  Result<std::string_view> readKept(std::optional<KeptFile>& file, const char* name);

  UniqueFd dir_;
  std::string path_;
  std::uint64_t inode_ = 0;
  std::optional<KeptFile> memoryStat_, cpuStat_;
};

}  // namespace reclaimd::cgroup

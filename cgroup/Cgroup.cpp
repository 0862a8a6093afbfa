#include "cgroup/Cgroup.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <cerrno>

#include "cgroup/ControlFiles.h"
#include "cgroup/Reclaim.h"
#include "cgroup/Tree.h"

namespace reclaimd::cgroup {

Result<Cgroup> Cgroup::open(int rootFd, std::string path) {
  auto dir = openCgroupDir(rootFd, path);
  if (!dir) return dir.error();
  auto inode = inodeOf(dir->get());
  if (!inode) return inode.error();
  return Cgroup(std::move(*dir), std::move(path), *inode);
}

namespace {

// Whether the cgroup `dirFd` is there without the controller that makes its file `name`, which
// could not be opened (`error`). A removed cgroup's directory holds nothing; one that still has
// cgroup.controllers is there, without the file. A child cgroup may take the name only where the
// kernel made no such file.
bool withoutController(int dirFd, const char* name, const Error& error) {
  struct stat st {};
  if (cgroupGone(error)) return ::fstatat(dirFd, kControllers, &st, AT_SYMLINK_NOFOLLOW) == 0;
  return ::fstatat(dirFd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode);
}

}  // namespace

Result<std::string_view> Cgroup::readKept(std::optional<KeptFile>& file, const char* name) {
  if (!file) {
    auto opened = KeptFile::open(dir_.get(), name, label() + "/" + name);
    if (!opened) {
      if (withoutController(dir_.get(), name, opened.error())) {
        return errnoError(EOPNOTSUPP, label() + ": no " + name +
                                          ": its controller is not enabled here (the parent's cgroup.subtree_control)");
      }
      return opened.error();
    }
    file = std::move(*opened);
  }
  auto text = file->read();
  if (!text) return Error{text.error().code, "read " + label() + "/" + name};
  return text;
}

Result<MemoryStat> Cgroup::memoryStat() {
  auto text = readKept(memoryStat_, kMemoryStat);
  if (!text) return text.error();
  auto parsed = parseMemoryStat(*text);
  if (!parsed) return Error{parsed.error().code, label() + ": " + parsed.error().context};
  return parsed;
}

Result<CpuStat> Cgroup::cpuStat() {
  auto text = readKept(cpuStat_, kCpuStat);
  if (!text) return text.error();
  auto parsed = parseCpuStat(*text);
  if (!parsed) return Error{parsed.error().code, label() + ": " + parsed.error().context};
  return parsed;
}

Result<ReclaimFile> Cgroup::openReclaim() const {
  return ReclaimFile::open(dir_.get(), label());
}

}  // namespace reclaimd::cgroup

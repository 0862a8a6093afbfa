// A fanotify group that reports which files are opened, read and written on the filesystems it
// watches (filesystem marks, file ids rather than fds: nothing is opened per event).
//
// Each file shows once an epoch: its first event puts an ignore mark on it (quiet()), and a new
// epoch (newEpoch()) flushes those marks. So a process reading one file a million times costs
// one event an epoch, not a million; and what is known of a file is the epoch it was last used
// in, which is all a cold age needs.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "access/Events.h"
#include "base/Result.h"
#include "base/UniqueFd.h"

namespace reclaimd::access {

class Watch {
 public:
  // A group of this process's (needs CAP_SYS_ADMIN), non-blocking. Errors: fanotify_init's errno.
  static Result<Watch> open();

  // Marks the filesystem mounted at `mountPoint`. Errors: fanotify_mark's errno (EXDEV or
  // EOPNOTSUPP: the filesystem cannot name its files by handle), or the mount point's.
  Result<void> watch(const std::string& mountPoint);

  // For epoll: readable while events wait.
  int fd() const { return group_.get(); }

  // Reads what waits, up to `maxBytes` of records (more waits for the next call). Errors: read's
  // errno other than EAGAIN.
  Result<Drained> drain(std::size_t maxBytes = 256 * 1024);

  // No more events of `file` until the next epoch. Errors: the handle no longer opens (the file
  // was deleted: ESTALE), or fanotify_mark's errno (ENOSPC: the user's mark limit).
  Result<void> quiet(const FileId& file);
  // Every file shows again at its next use. Errors: fanotify_mark's errno.
  Result<void> newEpoch();

  // Opens `file` by its handle with `flags` (needs CAP_DAC_READ_SEARCH). Errors: ESTALE when it
  // is gone, ENOENT when its filesystem is not watched here.
  Result<UniqueFd> openFile(const FileId& file, int flags) const;

 private:
  explicit Watch(UniqueFd group) : group_(std::move(group)) {}

  UniqueFd group_;
  std::map<std::uint64_t, UniqueFd> mounts_;  // fsid -> the watched mount's root, for handles
};

}  // namespace reclaimd::access

// Small file helpers over raw fds, so every errno the kernel gives is seen and kept.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "base/Result.h"
#include "base/UniqueFd.h"

namespace reclaimd {

// Kernel text files read here are small; a file larger than this is treated as malformed
// rather than read without bound.
inline constexpr std::size_t kMaxKernelFileBytes = 1 << 20;

// Opens `path` relative to `dirFd` (AT_FDCWD for absolute or cwd-relative paths) with
// O_CLOEXEC added to `flags`. Errors carry the errno and the path.
Result<UniqueFd> openAt(int dirFd, const std::string& path, int flags);

// Whether the last component of a path may be a symlink. Only the last: /proc/self is one,
// and the roots the caller gave are trusted.
enum class LastSymlink { Refuse, Follow };

// Opens a kernel or cgroup control file (or the policy): O_NOFOLLOW (unless `symlink` is
// Follow), O_NONBLOCK and O_CLOEXEC are added to `flags`, then fstat must say it is a regular
// file, so a symlink planted as memory.reclaim is not followed out of the cgroup root and a
// FIFO cannot block the loop. O_NONBLOCK only guards the open: it is cleared again unless
// `flags` asked for it, so a kernel that honours it on writes (as 6.x does for memory.max)
// does not turn a reclaim request into a no-op. Errors: the open errno (ENOENT/ENODEV: gone);
// Errc::Refused for a symlink, FIFO, socket, device or directory.
// `shownAs` names the file in messages when `path` alone is not enough ("a/b/memory.reclaim").
Result<UniqueFd> openRegular(int dirFd, const std::string& path, int flags, LastSymlink symlink = LastSymlink::Refuse,
                             std::string_view shownAs = {});

// Reads a whole (small) regular file, opened by openRegular. Errors: the open/read errno,
// Errc::Refused, or EFBIG past kMaxKernelFileBytes.
Result<std::string> readFileAt(int dirFd, const std::string& path, LastSymlink symlink = LastSymlink::Refuse);

// One write of `data` at offset 0 to an open fd. Returns the errno of a failed or short write;
// kernel control files take a request in one write.
Result<void> writeAll(int fd, std::string_view data, const std::string& what);

// Opens with openRegular, writes `data` once, closes.
Result<void> writeFileAt(int dirFd, const std::string& path, std::string_view data);

// A file kept open and re-read with pread: opening a file allocates kernel memory, which is
// exactly what runs short under pressure, so hot files are opened once (as lmkd does).
class KeptFile {
 public:
  KeptFile() = default;
  KeptFile(UniqueFd fd, std::string path) : fd_(std::move(fd)), path_(std::move(path)) {}

  // Opens a regular file for reading (openRegular; `shownAs` as there). Errors: as openRegular.
  static Result<KeptFile> open(int dirFd, const std::string& path, std::string_view shownAs = {});

  // Reads the file from offset 0. The view is valid until the next read().
  Result<std::string_view> read();

  const std::string& path() const { return path_; }
  int fd() const { return fd_.get(); }

 private:
  UniqueFd fd_;
  std::string path_;
  std::string buffer_;
};

}  // namespace reclaimd

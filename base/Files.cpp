#include "base/Files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

namespace reclaimd {

Result<UniqueFd> openAt(int dirFd, const std::string& path, int flags) {
  int fd = ::openat(dirFd, path.c_str(), flags | O_CLOEXEC);
  if (fd < 0) return errnoError(errno, "open " + path);
  return UniqueFd(fd);
}

namespace {

const char* fileKind(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISCHR(mode) || S_ISBLK(mode)) return "a device";
  if (S_ISLNK(mode)) return "a symlink";
  return "not a regular file";
}

}  // namespace

Result<UniqueFd> openRegular(int dirFd, const std::string& path, int flags, LastSymlink symlink,
                             std::string_view shownAs) {
  const std::string name = shownAs.empty() ? path : std::string(shownAs);
  const int guard = O_NONBLOCK | (symlink == LastSymlink::Refuse ? O_NOFOLLOW : 0);
  int raw = ::openat(dirFd, path.c_str(), flags | guard | O_CLOEXEC);
  if (raw < 0) {
    const int err = errno;
    // O_NOFOLLOW on a symlink: ELOOP; O_WRONLY|O_NONBLOCK on a FIFO without a reader: ENXIO.
    if (err == ELOOP && symlink == LastSymlink::Refuse) return refusedError("refused " + name + ": a symlink");
    if (err == ENXIO) return refusedError("refused " + name + ": not a regular file");
    return errnoError(err, "open " + name);
  }
  UniqueFd fd(raw);
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return errnoError(errno, "fstat " + name);
  if (!S_ISREG(st.st_mode)) return refusedError("refused " + name + ": " + fileKind(st.st_mode));
  if ((flags & O_NONBLOCK) == 0) {
    const int now = ::fcntl(fd.get(), F_GETFL);
    if (now < 0 || ::fcntl(fd.get(), F_SETFL, now & ~O_NONBLOCK) != 0) return errnoError(errno, "fcntl " + name);
  }
  return fd;
}

namespace {

// Reads from offset 0 into `buffer`, growing it until a read returns less than asked.
Result<std::string_view> preadWhole(int fd, std::string& buffer, const std::string& path) {
  if (buffer.size() < 4096) buffer.resize(4096);
  std::size_t used = 0;
  for (;;) {
    ssize_t n = ::pread(fd, buffer.data() + used, buffer.size() - used, static_cast<off_t>(used));
    if (n < 0) {
      if (errno == EINTR) continue;
      return errnoError(errno, "read " + path);
    }
    used += static_cast<std::size_t>(n);
    if (n == 0 || used < buffer.size()) break;
    if (buffer.size() >= kMaxKernelFileBytes) return errnoError(EFBIG, "read " + path);
    buffer.resize(buffer.size() * 2);
  }
  return std::string_view(buffer.data(), used);
}

}  // namespace

Result<std::string> readFileAt(int dirFd, const std::string& path, LastSymlink symlink) {
  auto fd = openRegular(dirFd, path, O_RDONLY, symlink);
  if (!fd) return fd.error();
  std::string buffer;
  auto view = preadWhole(fd->get(), buffer, path);
  if (!view) return view.error();
  buffer.resize(view->size());
  return buffer;
}

Result<void> writeAll(int fd, std::string_view data, const std::string& what) {
  for (;;) {
    ssize_t n = ::pwrite(fd, data.data(), data.size(), 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errnoError(errno, "write " + what);
    if (static_cast<std::size_t>(n) != data.size()) return errnoError(EIO, "short write " + what);
    return {};
  }
}

Result<void> writeFileAt(int dirFd, const std::string& path, std::string_view data) {
  auto fd = openRegular(dirFd, path, O_WRONLY);
  if (!fd) return fd.error();
  return writeAll(fd->get(), data, path);
}

Result<KeptFile> KeptFile::open(int dirFd, const std::string& path, std::string_view shownAs) {
  auto fd = openRegular(dirFd, path, O_RDONLY, LastSymlink::Refuse, shownAs);
  if (!fd) return fd.error();
  return KeptFile(std::move(*fd), shownAs.empty() ? path : std::string(shownAs));
}

Result<std::string_view> KeptFile::read() {
  if (!fd_) return errnoError(EBADF, "read " + path_);
  return preadWhole(fd_.get(), buffer_, path_);
}

}  // namespace reclaimd

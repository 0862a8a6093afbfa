#include "base/Files.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

namespace reclaimd {

Result<UniqueFd> openAt(int dirFd, const std::string& path, int flags) {
  int fd = ::openat(dirFd, path.c_str(), flags | O_CLOEXEC);
  if (fd < 0) return errnoError(errno, "open " + path);
  return UniqueFd(fd);
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

Result<std::string> readFileAt(int dirFd, const std::string& path) {
  auto fd = openAt(dirFd, path, O_RDONLY);
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
  auto fd = openAt(dirFd, path, O_WRONLY);
  if (!fd) return fd.error();
  return writeAll(fd->get(), data, path);
}

Result<KeptFile> KeptFile::open(int dirFd, const std::string& path) {
  auto fd = openAt(dirFd, path, O_RDONLY);
  if (!fd) return fd.error();
  return KeptFile(std::move(*fd), path);
}

Result<std::string_view> KeptFile::read() {
  if (!fd_) return errnoError(EBADF, "read " + path_);
  return preadWhole(fd_.get(), buffer_, path_);
}

}  // namespace reclaimd

#include "access/Watch.h"

#include <fcntl.h>
#include <sys/fanotify.h>
#include <sys/statfs.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <vector>

namespace reclaimd::access {

namespace {

// A file counts as used when it is opened (a mapping's user shows only then), read or written.
constexpr std::uint64_t kEvents = FAN_OPEN | FAN_ACCESS | FAN_MODIFY | FAN_CLOSE_WRITE;

std::uint64_t fsidOf(const struct statfs& st) {
  std::uint64_t id = 0;
  static_assert(sizeof st.f_fsid == sizeof id);
  std::memcpy(&id, &st.f_fsid, sizeof id);
  return id;
}

}  // namespace

Result<Watch> Watch::open() {
  const int fd = ::fanotify_init(FAN_CLASS_NOTIF | FAN_REPORT_FID | FAN_CLOEXEC | FAN_NONBLOCK, O_RDONLY | O_LARGEFILE);
  if (fd < 0) return errnoError(errno, "fanotify_init");
  return Watch(UniqueFd(fd));
}

Result<void> Watch::watch(const std::string& mountPoint) {
  // Not O_PATH: open_by_handle_at refuses such an fd as its mount.
  UniqueFd root(::open(mountPoint.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!root) return errnoError(errno, "open " + mountPoint);
  struct statfs st {};
  if (::fstatfs(root.get(), &st) != 0) return errnoError(errno, "statfs " + mountPoint);
  if (::fanotify_mark(group_.get(), FAN_MARK_ADD | FAN_MARK_FILESYSTEM, kEvents, AT_FDCWD, mountPoint.c_str()) != 0)
    return errnoError(errno, "fanotify_mark " + mountPoint);
  mounts_.try_emplace(fsidOf(st), std::move(root));
  return {};
}

Result<Drained> Watch::drain(std::size_t maxBytes) {
  Drained out;
  // Aligned for the kernel's records; parseEvents copies fields out anyway.
  std::vector<std::uint64_t> buffer(64 * 1024 / sizeof(std::uint64_t));
  for (std::size_t read = 0; read < maxBytes;) {
    const ssize_t n = ::read(group_.get(), buffer.data(), buffer.size() * sizeof(std::uint64_t));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) break;
    if (n < 0) return errnoError(errno, "read fanotify events");
    if (n == 0) break;
    parseEvents(std::as_bytes(std::span(buffer)).first(static_cast<std::size_t>(n)), out);
    read += static_cast<std::size_t>(n);
  }
  return out;
}

Result<UniqueFd> Watch::openFile(const FileId& file, int flags) const {
  const auto mount = mounts_.find(file.fsid);
  if (mount == mounts_.end()) return errnoError(ENOENT, "open by handle: filesystem not watched");
  auto handle = std::make_unique<std::byte[]>(sizeof(struct file_handle) + file.handle.size());
  auto* fh = reinterpret_cast<struct file_handle*>(handle.get());
  fh->handle_bytes = static_cast<unsigned>(file.handle.size());
  fh->handle_type = file.handleType;
  std::memcpy(fh->f_handle, file.handle.data(), file.handle.size());
  const int fd = ::open_by_handle_at(mount->second.get(), fh, flags | O_CLOEXEC);
  if (fd < 0) return errnoError(errno, "open by handle");
  return UniqueFd(fd);
}

Result<void> Watch::quiet(const FileId& file) {
  // O_PATH: no open event of reclaimd's own. fanotify_mark takes no O_PATH fd as its object,
  // but a path through /proc/self/fd reaches the same inode.
  auto fd = openFile(file, O_PATH);
  if (!fd) return fd.error();
  const std::string path = "/proc/self/fd/" + std::to_string(fd->get());
  if (::fanotify_mark(group_.get(), FAN_MARK_ADD | FAN_MARK_IGNORED_MASK | FAN_MARK_IGNORED_SURV_MODIFY, kEvents,
                      AT_FDCWD, path.c_str()) != 0)
    return errnoError(errno, "fanotify_mark (ignore)");
  return {};
}

Result<void> Watch::newEpoch() {
  // Without a mark type, a flush removes the group's inode marks: the ignore marks alone.
  if (::fanotify_mark(group_.get(), FAN_MARK_FLUSH, 0, AT_FDCWD, nullptr) != 0)
    return errnoError(errno, "fanotify_mark (flush)");
  return {};
}

}  // namespace reclaimd::access

#include "controller/operate/MetricsFile.h"

#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <ctime>

#include "base/UniqueFd.h"

namespace reclaimd::controller {

namespace {

// A name nobody can guess, so a planted file or symlink can only make a try fail (EEXIST).
// It does not end in .prom: the textfile collector must not read it half written.
std::string randomName(const std::string& base) {
  unsigned char bytes[8] = {};
  if (::getrandom(bytes, sizeof bytes, GRND_NONBLOCK) != static_cast<ssize_t>(sizeof bytes)) {
    // Too early in boot for the pool: the pid and the time still make a collision unlikely, and
    // a planted name makes the try fail, never redirect it.
    const auto mixed = static_cast<unsigned long long>(::getpid()) ^ static_cast<unsigned long long>(::time(nullptr));
    for (std::size_t i = 0; i < sizeof bytes; ++i)
      bytes[i] = static_cast<unsigned char>(mixed >> (8 * i));
  }
  std::string out = "." + base + ".";
  char hex[3];
  for (unsigned char b : bytes) {
    std::snprintf(hex, sizeof hex, "%02x", b);
    out += hex;
  }
  return out + ".tmp";
}

Result<void> writeAll(int fd, const std::string& text) {
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return errnoError(n < 0 ? errno : EIO, "write");
    done += static_cast<std::size_t>(n);
  }
  // Mode set on the open file before it has a name: never through a path.
  if (::fchmod(fd, 0644) != 0) return errnoError(errno, "fchmod");
  return {};
}

// Gives the unnamed file `fd` the name `name` in `dir`. AT_EMPTY_PATH needs
// CAP_DAC_READ_SEARCH (root has it); /proc/self/fd is the way without it.
bool linkTmpfile(int fd, int dir, const std::string& name) {
  if (::linkat(fd, "", dir, name.c_str(), AT_EMPTY_PATH) == 0) return true;
  if (errno == EEXIST) return false;
  const std::string self = "/proc/self/fd/" + std::to_string(fd);
  return ::linkat(AT_FDCWD, self.c_str(), dir, name.c_str(), AT_SYMLINK_FOLLOW) == 0;
}

// A fresh random name in `dir` holding `text`, or an error.
Result<std::string> writeTemporary(int dir, const std::string& base, const std::string& text) {
  constexpr int kTries = 8;  // each try fails only on a name collision (a planted file)
  UniqueFd tmp(::openat(dir, ".", O_TMPFILE | O_WRONLY | O_CLOEXEC, 0600));
  if (tmp) {
    if (auto written = writeAll(tmp.get(), text); !written) return written.error();
    for (int i = 0; i < kTries; ++i) {
      std::string name = randomName(base);
      if (linkTmpfile(tmp.get(), dir, name)) return name;
      if (errno != EEXIST) return errnoError(errno, "linkat");
    }
    return errnoError(EEXIST, "linkat");
  }
  if (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL) return errnoError(errno, "open O_TMPFILE");
  for (int i = 0; i < kTries; ++i) {
    std::string name = randomName(base);
    UniqueFd fd(::openat(dir, name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
    if (!fd) {
      if (errno == EEXIST) continue;
      return errnoError(errno, "open " + name);
    }
    if (auto written = writeAll(fd.get(), text); !written) {
      ::unlinkat(dir, name.c_str(), 0);
      return written.error();
    }
    return name;
  }
  return errnoError(EEXIST, "open");
}

}  // namespace

Result<void> writeFileAtomically(const std::string& path, const std::string& text) {
  const std::size_t slash = path.rfind('/');
  const std::string dirPath = slash == std::string::npos ? "." : (slash == 0 ? "/" : path.substr(0, slash));
  const std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
  if (base.empty()) return invalidError(path + ": not a file name");
  UniqueFd dir(::open(dirPath.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!dir) return errnoError(errno, "open " + dirPath);
  auto name = writeTemporary(dir.get(), base, text);
  if (!name) return Error{name.error().code, name.error().context + " in " + dirPath};
  if (::renameat(dir.get(), name->c_str(), dir.get(), base.c_str()) != 0) {
    const int err = errno;
    // The rename's error is the one to report; a temporary that cannot be removed either is
    // left, under a name no reader takes for the metrics file: ignoring.
    (void)::unlinkat(dir.get(), name->c_str(), 0);
    return errnoError(err, "rename to " + path);
  }
  return {};
}

std::string markStopped(std::string text) {
  static constexpr std::string_view kUp = "\nreclaimd_up 1\n";
  const std::size_t at = text.find(kUp);
  if (at != std::string::npos) text[at + kUp.size() - 2] = '0';
  return text;
}

}  // namespace reclaimd::controller

// Reading the policy files: the only I/O in policies/.
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <memory>

#include "base/Files.h"
#include "base/Units.h"
#include "policies/Loader.h"

namespace reclaimd::policies {

namespace {

const char* fileKind(mode_t mode) {
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

}  // namespace

Result<std::string> readPolicyText(const std::string& path) {
  // O_NONBLOCK: opening a FIFO with no writer would otherwise wait for one, and the loop with it.
  auto fd = openAt(AT_FDCWD, path, O_RDONLY | O_NONBLOCK);
  if (!fd) return fd.error();
  struct stat st {};
  if (::fstat(fd->get(), &st) != 0) return errnoError(errno, "stat " + path);
  if (!S_ISREG(st.st_mode)) {
    return invalidError(path + ": " + fileKind(st.st_mode) + ", not a regular file: a policy must be a file");
  }
  const std::string tooBig = path + ": larger than the " + formatBytes(kMaxPolicyBytes) + " a policy may be";
  if (static_cast<std::uint64_t>(st.st_size) > kMaxPolicyBytes) return invalidError(tooBig);
  std::string text;
  char buffer[16384];
  for (;;) {
    const ssize_t n = ::read(fd->get(), buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errnoError(errno, "read " + path);
    if (n == 0) break;
    text.append(buffer, static_cast<std::size_t>(n));
    if (text.size() > kMaxPolicyBytes) return invalidError(tooBig);  // it grew while read
  }
  return text;
}

std::string dropInDirectory(const std::string& mainPath) {
  const std::size_t slash = mainPath.rfind('/');
  const std::string dir = slash == std::string::npos ? "" : mainPath.substr(0, slash + 1);
  std::string name = slash == std::string::npos ? mainPath : mainPath.substr(slash + 1);
  const std::size_t dot = name.rfind('.');
  if (dot != std::string::npos && dot > 0) name.resize(dot);
  return dir + name + ".d";
}

namespace {

// The drop-in names in `dir`, sorted bytewise; a missing directory has none.
Result<std::vector<std::string>> dropInNames(const std::string& dir) {
  std::unique_ptr<DIR, int (*)(DIR*)> d(::opendir(dir.c_str()), ::closedir);
  if (!d) {
    if (errno == ENOENT) return std::vector<std::string>{};
    return errnoError(errno, "open drop-in directory " + dir);
  }
  std::vector<std::string> names;
  errno = 0;
  while (const dirent* e = ::readdir(d.get())) {
    const std::string name = e->d_name;
    // Hidden names are editors' and package managers' temporary files.
    if (name.empty() || name.front() == '.' || name.size() <= 5 || !name.ends_with(".yaml")) continue;
    names.push_back(name);
    if (names.size() > kMaxDropIns) {
      return invalidError(dir + ": more than " + std::to_string(kMaxDropIns) + " drop-in files");
    }
  }
  if (errno != 0) return errnoError(errno, "read drop-in directory " + dir);
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace

Result<std::vector<PolicyText>> readPolicyFiles(const std::string& mainPath) {
  std::vector<PolicyText> files;
  auto main = readPolicyText(mainPath);
  if (!main) return main.error();
  files.push_back({mainPath, std::move(*main)});
  const std::string dir = dropInDirectory(mainPath);
  auto names = dropInNames(dir);
  if (!names) return names.error();
  for (const std::string& name : *names) {
    const std::string path = dir + "/" + name;
    auto text = readPolicyText(path);
    if (!text) return text.error();
    files.push_back({path, std::move(*text)});
  }
  return files;
}

Result<Policy> loadPolicyFile(const std::string& path) {
  auto files = readPolicyFiles(path);
  if (!files) return files.error();
  return parsePolicyFiles(*files);
}

}  // namespace reclaimd::policies

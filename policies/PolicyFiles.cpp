// Reading the policy files: the only I/O in policies/.
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <memory>

#include "base/Files.h"
#include "base/Quantities.h"
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

std::string octal(mode_t mode) {
  char out[8];
  std::snprintf(out, sizeof out, "%04o", static_cast<unsigned>(mode & 07777));
  return out;
}

// A policy decides what the root daemon writes to every cgroup: like sudoers and systemd's unit
// files, it is obeyed only when root (or the user the command runs as) owns it and nobody else
// may write it. Anything else could have been written by anyone.
Result<void> checkTrusted(const std::string& path, const struct stat& st, const char* what) {
  const uid_t self = ::geteuid();
  if (st.st_uid != 0 && st.st_uid != self) {
    return invalidError(path + ": " + what + " owned by uid " + std::to_string(st.st_uid) + ", not root" +
                        (self != 0 ? " nor uid " + std::to_string(self) : std::string()) +
                        ": a policy is obeyed only when root owns it (chown root)");
  }
  if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
    return invalidError(path + ": " + what + " writable by " + ((st.st_mode & S_IWOTH) ? "others" : "its group") +
                        " (mode " + octal(st.st_mode) + "): a policy is obeyed only when nobody else may write it " +
                        "(chmod go-w)");
  }
  return {};
}

}  // namespace

Result<std::string> readPolicyText(const std::string& path, std::size_t budget) {
  // O_NONBLOCK: opening a FIFO with no writer would otherwise wait for one, and the loop with it.
  auto fd = openAt(AT_FDCWD, path, O_RDONLY | O_NONBLOCK);
  if (!fd) return fd.error();
  struct stat st {};
  if (::fstat(fd->get(), &st) != 0) return errnoError(errno, "stat " + path);
  if (!S_ISREG(st.st_mode)) {
    return invalidError(path + ": " + fileKind(st.st_mode) + ", not a regular file: a policy must be a file");
  }
  if (auto trusted = checkTrusted(path, st, "a file"); !trusted) return trusted.error();
  const std::string tooBig = budget < kMaxPolicyBytes
                                 ? path + ": beyond the " + formatBytes(kMaxPolicyBytes) +
                                       " a policy may be with its drop-ins (" + formatBytes(budget) + " were left)"
                                 : path + ": larger than the " + formatBytes(kMaxPolicyBytes) + " a policy may be";
  if (static_cast<std::uint64_t>(st.st_size) > budget) return invalidError(tooBig);
  std::string text;
  char buffer[16384];
  for (;;) {
    const ssize_t n = ::read(fd->get(), buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errnoError(errno, "read " + path);
    if (n == 0) break;
    text.append(buffer, static_cast<std::size_t>(n));
    if (text.size() > budget) return invalidError(tooBig);  // it grew while read
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
  // Whoever may write the directory may remove or rename root's drop-ins (a protection rule):
  // only a sticky directory keeps others' hands off files that are not theirs.
  struct stat st {};
  if (::fstat(::dirfd(d.get()), &st) != 0) return errnoError(errno, "stat drop-in directory " + dir);
  if ((st.st_mode & S_ISVTX) == 0) {
    if (auto trusted = checkTrusted(dir, st, "a drop-in directory"); !trusted) return trusted.error();
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
  std::size_t left = kMaxPolicyBytes - main->size();
  files.push_back({mainPath, std::move(*main)});
  const std::string dir = dropInDirectory(mainPath);
  auto names = dropInNames(dir);
  if (!names) return names.error();
  for (const std::string& name : *names) {
    const std::string path = dir + "/" + name;
    // Each drop-in's size is checked against what the policy has left before it is read: the
    // files together, not each, are held to kMaxPolicyBytes.
    auto text = readPolicyText(path, left);
    if (!text) return text.error();
    left -= text->size();
    files.push_back({path, std::move(*text)});
  }
  return files;
}

std::vector<std::string> skippedDropIns(const std::string& mainPath) {
  const std::string dir = dropInDirectory(mainPath);
  std::unique_ptr<DIR, int (*)(DIR*)> d(::opendir(dir.c_str()), ::closedir);
  std::vector<std::string> skipped;
  while (d && skipped.size() <= kMaxDropIns) {
    const dirent* e = ::readdir(d.get());
    if (!e) break;
    const std::string name = e->d_name;
    if (name.size() > 4 && name.front() != '.' && name.ends_with(".yml")) skipped.push_back(dir + "/" + name);
  }
  std::sort(skipped.begin(), skipped.end());
  return skipped;
}

Result<Policy> loadPolicyFile(const std::string& path) {
  auto files = readPolicyFiles(path);
  if (!files) return files.error();
  return parsePolicyFiles(*files);
}

}  // namespace reclaimd::policies

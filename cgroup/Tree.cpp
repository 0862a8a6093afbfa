#include "cgroup/Tree.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <new>

namespace reclaimd::cgroup {

namespace {

struct Entry {
  std::string name;
  std::uint64_t inode;
  unsigned char type;
};

// The directory's entries, "." and ".." left out. getdents64 rather than readdir: no
// allocation per directory beyond the names, and d_type/d_ino come with every entry.
// `fd` must be at offset 0 (freshly opened, or rewound by the caller).
Result<std::vector<Entry>> listDir(int fd) {
  std::vector<Entry> out;
  alignas(8) char buffer[32768];
  for (;;) {
    long n = ::syscall(SYS_getdents64, fd, buffer, sizeof buffer);
    if (n < 0) return errnoError(errno, "getdents64");
    if (n == 0) break;
    for (long pos = 0; pos < n;) {
      auto* d = reinterpret_cast<struct dirent64*>(buffer + pos);
      pos += d->d_reclen;
      const char* name = d->d_name;
      if (name[0] == '.' && (name[1] == '\0' || (name[1] == '.' && name[2] == '\0'))) continue;
      out.push_back(Entry{name, d->d_ino, d->d_type});
    }
  }
  return out;
}

bool goneErrno(int err) {
  return err == ENOENT || err == ENODEV;
}

// The walk could not see below node `index` (EMFILE, ENFILE, EACCES, ENOMEM, maxNodes): its
// subtree is unknown, which is not the same as gone. Decompose never writes at or above it.
// `what` names the call that failed with `err` ("open"); err 0 is maxNodes, which has no error.
void markIncomplete(Tree& tree, int index, int err, const char* what) {
  TreeNode& node = tree.nodes[static_cast<std::size_t>(index)];
  if (!node.incomplete) ++tree.incomplete;
  node.incomplete = true;
  if (err == 0 || tree.incompleteError) return;
  const std::string path = tree.path(index);
  tree.incompleteError = errnoError(err, std::string(what) + " " + (path.empty() ? "the cgroup root" : path));
}

// What one walk carries down: its limits, and the path of the directory being listed (one
// buffer, extended and cut back as the walk goes down and up: no path is stored per node).
struct Walk {
  Tree& tree;
  std::size_t maxNodes;
  const Descend& descend;
  std::string path;
};

// Adds `e` below node `parentIndex` (whose path is w.path) and returns its index; -1 at maxNodes,
// where the rest of the parent's children are not looked at and the parent is marked incomplete,
// and -1 past kMaxWalkPath, where the parent is marked incomplete (ENAMETOOLONG).
int addNode(Walk& w, int parentIndex, const Entry& e) {
  Tree& tree = w.tree;
  if (tree.nodes.size() >= w.maxNodes) {
    tree.truncated = true;
    markIncomplete(tree, parentIndex, 0, "");
    return -1;
  }
  if (w.path.size() + 1 + e.name.size() > kMaxWalkPath) {
    markIncomplete(tree, parentIndex, ENAMETOOLONG, "list the children of");
    return -1;
  }
  TreeNode node;
  node.name = e.name;
  node.inode = e.inode;
  node.parent = parentIndex;
  const int childIndex = static_cast<int>(tree.nodes.size());
  tree.nodes[static_cast<std::size_t>(parentIndex)].children.push_back(childIndex);
  tree.nodes.push_back(std::move(node));
  return childIndex;
}

// Extends w.path by one component for as long as it lives, and cuts it back after.
class Descent {
 public:
  Descent(Walk& w, const std::string& name) : w_(w), size_(w.path.size()) {
    if (!w.path.empty()) w.path += '/';
    w.path += name;
  }
  ~Descent() { w_.path.resize(size_); }
  Descent(const Descent&) = delete;
  Descent& operator=(const Descent&) = delete;

 private:
  Walk& w_;
  std::size_t size_;
};

void walkChildren(Walk& w, int fd, int index);

// Whether the walk looks below the child `name` of the directory being listed.
bool descendInto(Walk& w, const std::string& name) {
  if (!w.descend) return true;
  Descent child(w, name);
  return w.descend(w.path);
}

// Adds the subdirectory `e` of directory `fd` (node `index`) and its subtree.
void addChild(Walk& w, int fd, int index, const Entry& e) {
  Tree& tree = w.tree;
  // A cgroup below which nothing matters needs no fstatat, no open and no listing: the
  // directory entry says it is a directory and gives its inode.
  if (e.type == DT_DIR && !descendInto(w, e.name)) {
    const int childIndex = addNode(w, index, e);
    if (childIndex >= 0) tree.nodes[static_cast<std::size_t>(childIndex)].unlisted = true;
    return;
  }
  // One fstatat says what an entry is and, for a directory, how many subdirectories it has:
  // kernfs (cgroupfs) and tmpfs keep st_nlink at 2 + subdirectories. Most cgroups are leaves,
  // and a leaf needs no open and no listing at all.
  struct stat st {};
  if (::fstatat(fd, e.name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
    const int err = errno;
    if (goneErrno(err)) {
      ++tree.vanished;  // removed since the listing
    } else if (e.type == DT_LNK) {
      ++tree.symlinks;
    } else {
      // A cgroup we cannot see into.
      if (const int unseen = addNode(w, index, e); unseen >= 0) markIncomplete(tree, unseen, err, "stat");
    }
    return;
  }
  if (S_ISLNK(st.st_mode)) {
    ++tree.symlinks;
    return;
  }
  if (!S_ISDIR(st.st_mode)) return;
  const int childIndex = addNode(w, index, e);
  if (childIndex < 0) return;
  if (e.type != DT_DIR && !descendInto(w, e.name)) {
    tree.nodes[static_cast<std::size_t>(childIndex)].unlisted = true;  // d_type was DT_UNKNOWN
    return;
  }
  if (st.st_nlink == 2) return;  // a leaf (filesystems that report 1 for directories are listed)
  int childFd = ::openat(fd, e.name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (childFd < 0) {
    // Replaced by a symlink, or removed, since the fstatat: keep the node, skip its children.
    // Anything else (out of fds, no permission) leaves its children unknown, not gone.
    const int err = errno;
    if (err == ELOOP || err == ENOTDIR) {
      ++tree.symlinks;
    } else if (goneErrno(err)) {
      ++tree.vanished;
    } else {
      markIncomplete(tree, childIndex, err, "open");
    }
    return;
  }
  UniqueFd child(childFd);
  Descent down(w, e.name);
  walkChildren(w, child.get(), childIndex);
}

// Adds the subdirectories among `entries` (of directory `fd`, node `index`) and their subtrees.
void addChildren(Walk& w, int fd, int index, const std::vector<Entry>& entries) {
  for (const Entry& e : entries) {
    if (e.type != DT_DIR && e.type != DT_UNKNOWN && e.type != DT_LNK) continue;  // control files
    addChild(w, fd, index, e);
    if (w.tree.truncated) return;
  }
}

void walkChildren(Walk& w, int fd, int index) {
  auto entries = listDir(fd);
  if (!entries) {
    const int err = entries.error().errnoValue();
    if (goneErrno(err)) {
      ++w.tree.vanished;  // the directory went away after we opened it: its children with it
    } else {
      markIncomplete(w.tree, index, err, "list");
    }
    return;
  }
  addChildren(w, fd, index, *entries);
}

}  // namespace

Result<std::uint64_t> inodeOf(int fd) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) return errnoError(errno, "fstat");
  return static_cast<std::uint64_t>(st.st_ino);
}

Result<Tree> walkTree(int rootFd, std::size_t maxNodes, const Descend& descend) {
  Tree tree;
  auto inode = inodeOf(rootFd);
  if (!inode) return inode.error();
  // The root's fd is kept across walks: rewind it.
  if (::lseek(rootFd, 0, SEEK_SET) < 0) return errnoError(errno, "read the cgroup root: lseek");
  try {
    auto entries = listDir(rootFd);
    if (!entries) return Error{entries.error().code, "read the cgroup root: " + entries.error().context};
    TreeNode root;
    root.inode = *inode;
    tree.nodes.push_back(std::move(root));
    Walk w{tree, maxNodes, descend, std::string()};
    addChildren(w, rootFd, 0, *entries);
  } catch (const std::bad_alloc&) {
    // Under an address-space limit the walk ends with an error the caller logs and retries
    // later, not with an exception that ends the daemon (and its restart into the same walk).
    return errnoError(ENOMEM, "walk the cgroup tree");
  }
  return tree;
}

std::string Tree::path(int index) const {
  std::vector<const std::string*> names;
  std::size_t size = 0;
  for (int i = index; i > 0; i = nodes[static_cast<std::size_t>(i)].parent) {
    names.push_back(&nodes[static_cast<std::size_t>(i)].name);
    size += names.back()->size() + 1;
  }
  std::string out;
  out.reserve(size);
  for (auto it = names.rbegin(); it != names.rend(); ++it) {
    if (!out.empty()) out += '/';
    out += **it;
  }
  return out;
}

Result<UniqueFd> openCgroupDir(int rootFd, std::string_view path) {
  int fd = ::openat(rootFd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return errnoError(errno, "open the cgroup root");
  UniqueFd current(fd);
  std::size_t pos = 0;
  while (pos < path.size()) {
    std::size_t slash = path.find('/', pos);
    if (slash == std::string_view::npos) slash = path.size();
    const std::string component(path.substr(pos, slash - pos));
    pos = slash + 1;
    if (component.empty() || component == "." || component == "..") {
      return errnoError(EINVAL, "open cgroup " + std::string(path) + ": bad component");
    }
    int next = ::openat(current.get(), component.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (next < 0) return errnoError(errno, "open cgroup " + std::string(path));
    current.reset(next);
  }
  return current;
}

}  // namespace reclaimd::cgroup

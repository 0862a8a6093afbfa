// The cgroups reclaimd touches: the root's directory, a walk of the tree, and the open files of
// the cgroups the engine names. No decisions: which cgroups are targets is the engine's call.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "base/UniqueFd.h"
#include "cgroup/Cgroup.h"
#include "cgroup/Tree.h"
#include "controller/engine/Readings.h"

namespace reclaimd::controller {

class Tracker {
 public:
  explicit Tracker(UniqueFd root) : root_(std::move(root)) {}

  int rootFd() const { return root_.get(); }
  Result<cgroup::Tree> walk(const cgroup::Descend& descend = {}) {
    return cgroup::walkTree(root_.get(), 1'000'000, descend);
  }
  // The cgroup `ref` names, opened on first use and kept until retain(). A cgroup found at the path under
  // another inode is a new one: ENOENT, as for one that is gone (the engine walks again).
  Result<cgroup::Cgroup*> open(const CgroupRef& ref);
  // Closes the files of every cgroup not in `keep`.
  void retain(const std::vector<CgroupRef>& keep);
  // Whether open() opened a cgroup since the last retain(): one that may not be kept.
  bool openedSinceRetain() const { return opened_; }

 private:
  UniqueFd root_;
  bool opened_ = false;
  std::map<std::string, cgroup::Cgroup, std::less<>> open_;
};

}  // namespace reclaimd::controller

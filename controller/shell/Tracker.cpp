#include "controller/shell/Tracker.h"

#include <algorithm>
#include <cerrno>
#include <string_view>
#include <unordered_map>

namespace reclaimd::controller {

Result<cgroup::Cgroup*> Tracker::open(const CgroupRef& ref) {
  auto it = open_.find(ref.path);
  if (it != open_.end() && (ref.inode == 0 || it->second.inode() == ref.inode)) return &it->second;
  if (it != open_.end()) open_.erase(it);
  auto opened = cgroup::Cgroup::open(root_.get(), std::string(ref.path));
  if (!opened) return opened.error();
  // The root has no inode in the engine's view (it never changes); below it the inode is the
  // cgroup's identity.
  if (ref.inode != 0 && opened->inode() != ref.inode)
    return errnoError(ENOENT, std::string(ref.path) + " was made again (a new cgroup under the old name)");
  auto [placed, inserted] = open_.emplace(std::string(ref.path), std::move(*opened));
  opened_ = true;
  return &placed->second;
}

void Tracker::retain(const std::vector<CgroupRef>& keep) {
  opened_ = false;
  // Every target: hashed, not one scan of `keep` per open cgroup.
  std::unordered_multimap<std::string_view, std::uint64_t> kept;
  kept.reserve(keep.size());
  for (const CgroupRef& r : keep)
    kept.emplace(r.path, r.inode);
  for (auto it = open_.begin(); it != open_.end();) {
    const auto [first, last] = kept.equal_range(it->first);
    const bool stays =
        std::any_of(first, last, [&](const auto& k) { return k.second == 0 || k.second == it->second.inode(); });
    it = stays ? std::next(it) : open_.erase(it);
  }
}

}  // namespace reclaimd::controller

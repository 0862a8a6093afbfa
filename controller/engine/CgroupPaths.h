// Cgroup paths as the engine holds them: relative to the cgroup root, "" for the root, no
// trailing slash.
#pragma once

#include <string_view>

namespace reclaimd::controller {

// True when `path` is `ancestor` or below it.
inline bool within(std::string_view path, std::string_view ancestor) {
  if (ancestor.empty()) return true;
  return path.substr(0, ancestor.size()) == ancestor &&
         (path.size() == ancestor.size() || path[ancestor.size()] == '/');
}

// "a/b/c" -> "a/b", "a" -> "" (the root).
inline std::string_view parentPath(std::string_view path) {
  const std::size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? std::string_view() : path.substr(0, slash);
}

}  // namespace reclaimd::controller

#include "policies/Pattern.h"

#include <fnmatch.h>

namespace reclaimd::policies {

namespace {

bool hasWildcard(std::string_view component) {
  return component.find_first_of("*?[") != std::string_view::npos;
}

// Matches components[i..] against path[j..]; "**" takes any number of whole components.
bool matchFrom(const std::vector<std::string>& pattern, std::size_t i, const std::vector<std::string_view>& path,
               std::size_t j) {
  for (; i < pattern.size(); ++i, ++j) {
    if (pattern[i] == "**") {
      for (std::size_t k = j; k <= path.size(); ++k) {
        if (matchFrom(pattern, i + 1, path, k)) return true;
      }
      return false;
    }
    if (j >= path.size()) return false;
    const std::string component(path[j]);
    if (fnmatch(pattern[i].c_str(), component.c_str(), 0) != 0) return false;
  }
  return j == path.size();
}

}  // namespace

std::vector<std::string_view> splitPath(std::string_view path) {
  std::vector<std::string_view> out;
  std::size_t pos = 0;
  while (pos < path.size()) {
    std::size_t slash = path.find('/', pos);
    if (slash == std::string_view::npos) slash = path.size();
    out.push_back(path.substr(pos, slash - pos));
    pos = slash + 1;
  }
  return out;
}

Result<Pattern> Pattern::parse(std::string_view text) {
  auto fail = [&](const std::string& why) { return invalidError("\"" + std::string(text) + "\": " + why); };
  if (text.empty()) return fail("empty pattern (use \"**\" for every cgroup)");
  if (text.front() == '/') {
    return fail("patterns are relative to the cgroup root: write \"" + std::string(text.substr(1)) + "\"");
  }
  if (text.find('\0') != std::string_view::npos) return fail("contains a NUL byte");
  if (text.back() == '/') return fail("ends with '/'");
  Pattern p;
  p.text_ = std::string(text);
  for (std::string_view component : splitPath(text)) {
    if (component.empty()) return fail("empty path component (\"//\")");
    if (component == "." || component == "..")
      return fail("\".\" and \"..\" are not allowed: rules never leave the cgroup root");
    if (component.find("**") != std::string_view::npos && component != "**") {
      return fail("\"**\" must be a whole component");
    }
    if (component == "**") {
      p.exact_ = false;
    } else if (hasWildcard(component)) {
      p.exact_ = false;
      const bool onlyWildcards = component.find_first_not_of("*?") == std::string_view::npos;
      (onlyWildcards ? p.specificity_.single : p.specificity_.partial)++;
      for (char c : component)
        p.specificity_.literalChars += (c != '*' && c != '?' && c != '[' && c != ']') ? 1 : 0;
    } else {
      p.specificity_.literal++;
      p.specificity_.literalChars += static_cast<int>(component.size());
    }
    p.components_.emplace_back(component);
  }
  return p;
}

bool Pattern::matches(std::string_view path) const {
  return matchFrom(components_, 0, splitPath(path), 0);
}

}  // namespace reclaimd::policies

// The matcher, input "PATTERN\nPATH": it answers within the per-input timeout (libFuzzer's
// -timeout; nested "**" over a deep path must not be exponential) and agrees with a
// reference matcher, a dynamic programme over (pattern component, path component) that is
// quadratic by construction.
#include <fnmatch.h>

#include <string>
#include <vector>

#include "policies/Pattern.h"
#include "tests/fuzz/Check.h"

namespace {

using namespace reclaimd::policies;

bool hasWildcard(std::string_view c) {
  return c.find_first_of("*?[") != std::string_view::npos;
}

// One component: without wildcards it is text, else an fnmatch glob. (Backslashes are left
// out of the comparison: whether they escape is for the matcher to choose, and the pattern
// target checks that an exact pattern matches its own text.)
bool componentMatches(std::string_view pattern, std::string_view name) {
  if (!hasWildcard(pattern)) return pattern == name;
  return fnmatch(std::string(pattern).c_str(), std::string(name).c_str(), 0) == 0;
}

// m[i][j]: pattern components i.. match path components j..; "**" takes zero or more whole
// components, so m[i][j] = m[i+1][j] || m[i][j+1].
bool reference(const std::vector<std::string_view>& pattern, const std::vector<std::string_view>& path) {
  const std::size_t n = pattern.size(), k = path.size();
  std::vector<std::vector<char>> m(n + 1, std::vector<char>(k + 1, 0));
  m[n][k] = 1;
  for (std::size_t i = n; i-- > 0;) {
    for (std::size_t j = k + 1; j-- > 0;) {
      if (pattern[i] == "**") {
        m[i][j] = m[i + 1][j] || (j < k && m[i][j + 1]);
      } else {
        m[i][j] = j < k && m[i + 1][j + 1] && componentMatches(pattern[i], path[j]);
      }
    }
  }
  return m[0][0] != 0;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace reclaimd;
  const std::string_view input = fuzz::asText(data, size);
  const std::size_t newline = input.find('\n');
  if (newline == std::string_view::npos) return 0;
  auto p = Pattern::parse(input.substr(0, newline));
  if (!p) return 0;
  const std::string_view path = input.substr(newline + 1);
  // A cgroup name never holds a NUL (the kernel's names are C strings), so neither does a path.
  if (path.find('\0') != std::string_view::npos) return 0;
  const bool got = p->matches(path);
  if (p->text().find('\\') != std::string::npos) return 0;
  FUZZ_CHECK(got == reference(splitPath(p->text()), splitPath(path)), "the matcher agrees with the reference");
  return 0;
}

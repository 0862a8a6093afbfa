// The pattern compiler: a compiled pattern keeps its text and compiles again to the same
// pattern; an exact pattern matches its own text (and not its children); every pattern
// matches a path built from it (each "**" dropped, '*' and '?' filled with a letter).
#include <optional>
#include <string>

#include "policies/Pattern.h"
#include "tests/fuzz/Check.h"

namespace {

using namespace reclaimd::policies;

// A cgroup path `pattern` must match. None for brackets and backslashes, whose meaning the
// witness would have to re-implement (the exact-text property covers backslashes).
std::optional<std::string> witness(std::string_view pattern) {
  if (pattern.find_first_of("[\\") != std::string_view::npos) return std::nullopt;
  std::string path;
  for (std::string_view component : splitPath(pattern)) {
    if (component == "**") continue;  // zero components
    if (!path.empty()) path += '/';
    for (char c : component)
      path += c == '*' ? 'w' : c == '?' ? 'q' : c;
  }
  return path;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace reclaimd;
  const std::string_view text = fuzz::asText(data, size);
  auto p = Pattern::parse(text);
  if (!p) return 0;
  FUZZ_CHECK(p->text() == text, "a pattern keeps its text");
  auto again = Pattern::parse(p->text());
  FUZZ_CHECK(again.ok() && again->exact() == p->exact() && again->specificity() == p->specificity(),
             "a pattern's text compiles to the same pattern");
  if (p->exact()) {
    FUZZ_CHECK(p->matches(text), "an exact pattern matches its own text");
    FUZZ_CHECK(!p->matches(std::string(text) + "/child"), "an exact pattern does not match its children");
  }
  if (auto path = witness(text)) FUZZ_CHECK(p->matches(*path), "a pattern matches a path built from it");
  return 0;
}

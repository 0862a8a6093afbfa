// The pattern compiler: a compiled pattern keeps its text and compiles again to the same
// pattern; an exact pattern matches its own text (and not its children); every pattern
// matches a path built from it (each "**" dropped, '*' and '?' filled with a letter, a bracket
// expression with a character fnmatch says it holds: an accepted bracket is closed and not empty).
#include <fnmatch.h>

#include <algorithm>
#include <optional>
#include <string>

#include "policies/Pattern.h"
#include "tests/fuzz/Check.h"

namespace {

using namespace reclaimd::policies;

// The end (its ']') of the bracket expression opening at `open` of an accepted component.
std::size_t bracketEnd(std::string_view c, std::size_t open) {
  std::size_t i = open + 1;
  if (i < c.size() && (c[i] == '!' || c[i] == '^')) ++i;
  const std::size_t first = i;  // a ']' first is a member
  while (i < c.size() && (c[i] != ']' || i == first)) {
    if (c[i] == '[' && i + 1 < c.size() && (c[i + 1] == ':' || c[i + 1] == '=' || c[i + 1] == '.')) {
      const std::size_t close = c.find(std::string{c[i + 1], ']'}, i + 2);
      if (close == std::string_view::npos) return c.size();
      i = close + 2;
    } else if (i + 2 < c.size() && c[i + 1] == '-' && c[i + 2] != ']') {
      i += 3;  // a range: its end is not the start of another
    } else {
      ++i;
    }
  }
  return i;
}

// A character the bracket expression `expr` ("[...]") matches, as fnmatch sees it: an accepted
// pattern has none that matches nothing (a rule that could never govern anything).
std::optional<char> member(const std::string& expr) {
  for (int b = 1; b < 256; ++b) {
    const char name[2] = {static_cast<char>(b), '\0'};
    if (b != '/' && fnmatch(expr.c_str(), name, FNM_NOESCAPE) == 0) return static_cast<char>(b);
  }
  return std::nullopt;
}

// A cgroup path `pattern` must match. None for backslashes, whose meaning the witness would
// have to re-implement (the exact-text property covers backslashes).
std::optional<std::string> witness(std::string_view pattern) {
  if (pattern.find('\\') != std::string_view::npos) return std::nullopt;
  std::string path;
  for (std::string_view component : splitPath(pattern)) {
    if (component == "**") continue;  // zero components
    if (!path.empty()) path += '/';
    const bool glob = component.find_first_of("*?[") != std::string_view::npos;
    for (std::size_t i = 0; i < component.size(); ++i) {
      const char c = component[i];
      if (glob && c == '[') {
        const std::size_t end = bracketEnd(component, i);
        FUZZ_CHECK(end < component.size(), "an accepted '[' is closed");
        // Only plain ASCII members and classes are judged against fnmatch here: collating
        // symbols, a '[' as a range's end and non-ASCII bytes are read by fnmatch in ways this
        // witness does not model.
        const std::string_view inner = component.substr(i + 1, end - i - 1);
        const bool plain = std::none_of(inner.begin(), inner.end(), [](char b) { return (b & 0x80) != 0; }) &&
                           inner.find("[.") == std::string_view::npos && inner.find("[=") == std::string_view::npos &&
                           inner.find("-[") == std::string_view::npos;
        if (!plain) return std::nullopt;
        const auto m = member(std::string(component.substr(i, end + 1 - i)));
        FUZZ_CHECK(m.has_value(), "an accepted bracket expression matches some character");
        path += *m;
        i = end;
        continue;
      }
      path += c == '*' ? 'w' : c == '?' ? 'q' : c;
    }
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

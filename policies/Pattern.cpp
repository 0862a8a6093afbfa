#include "policies/Pattern.h"

#include <fnmatch.h>

#include <bit>
#include <cstring>
#include <optional>

namespace reclaimd::policies {

namespace {

bool hasWildcard(std::string_view component) {
  return component.find_first_of("*?[") != std::string_view::npos;
}

// One pattern component against one cgroup name. An exact component compares bytes: a
// backslash is part of the name (systemd escapes '-' as "\x2d"), never an fnmatch escape, and
// FNM_NOESCAPE keeps globs the same ("system-systemd\x2d*.slice").
bool componentMatches(const std::string& pattern, bool literal, std::string_view name) {
  if (literal) return pattern == name;
  // fnmatch needs a terminated string; kernel names fit the buffer (NAME_MAX), others are copied.
  char buffer[kMaxComponentBytes + 1];
  if (name.size() <= kMaxComponentBytes) {
    std::memcpy(buffer, name.data(), name.size());
    buffer[name.size()] = '\0';
    return fnmatch(pattern.c_str(), buffer, FNM_NOESCAPE) == 0;
  }
  return fnmatch(pattern.c_str(), std::string(name).c_str(), FNM_NOESCAPE) == 0;
}

bool knownClass(std::string_view name) {
  for (std::string_view known :
       {"alnum", "alpha", "blank", "cntrl", "digit", "graph", "lower", "print", "punct", "space", "upper", "xdigit"}) {
    if (name == known) return true;
  }
  return false;
}

// The end of the bracket expression opening at `open` in `c` (the index of its ']'), or what is
// wrong with it. fnmatch takes an unclosed '[' as a literal character, an unknown class as no
// match and a reversed range as matching nothing: each would make a rule govern other cgroups
// than its text suggests, so each is refused. `at` is the component's offset in the pattern, to
// give positions in the text the user wrote (counted from 1).
Result<std::size_t> bracketEnd(std::string_view c, std::size_t open, std::size_t at) {
  const auto where = [&](std::size_t i) { return " at position " + std::to_string(at + i + 1); };
  std::optional<Error> wrong;  // said only when the expression is closed: else it is no expression
  std::size_t i = open + 1;
  if (i < c.size() && (c[i] == '!' || c[i] == '^')) ++i;
  const std::size_t first = i;  // a ']' first is a member (and may start a range), not the end
  for (; i < c.size() && (c[i] != ']' || i == first); ++i) {
    if (c[i] == '[' && i + 1 < c.size() && (c[i + 1] == ':' || c[i + 1] == '=' || c[i + 1] == '.')) {
      const char kind = c[i + 1];
      const std::size_t close = c.find(std::string{kind, ']'}, i + 2);
      if (close == std::string_view::npos) return invalidError("unclosed \"[" + std::string(1, kind) + "\"" + where(i));
      if (kind == ':' && !knownClass(c.substr(i + 2, close - i - 2)) && !wrong)
        wrong = invalidError("unknown character class \"" + std::string(c.substr(i, close + 2 - i)) + "\"" + where(i));
      // "[.a.]" and "[=a=]" name one character; a longer name is a locale's collating element,
      // which fnmatch in the daemon's locale does not know: the expression would match nothing.
      if (kind != ':' && close - i - 2 != 1 && !wrong)
        wrong = invalidError("\"" + std::string(c.substr(i, close + 2 - i)) + "\"" + where(i) +
                             " names no single character");
      i = close + 1;
      continue;
    }
    if (i + 2 < c.size() && c[i + 1] == '-' && c[i + 2] != ']') {
      if (static_cast<unsigned char>(c[i]) > static_cast<unsigned char>(c[i + 2]) && !wrong) {
        wrong = invalidError("the range \"" + std::string(c.substr(i, 3)) + "\"" + where(i) +
                             " is empty (its ends are reversed)");
      }
      i += 2;  // the range's end is not the start of another
    }
  }
  if (i >= c.size()) {
    return invalidError("unclosed '['" + where(open) + " (it would match a literal '['; write \"[[]\" for one)");
  }
  if (wrong) return *wrong;
  return i;
}

// A glob component's brackets are all closed and well formed, and no ']' stands outside one.
Result<void> checkGlob(std::string_view c, std::size_t at) {
  for (std::size_t i = 0; i < c.size(); ++i) {
    if (c[i] == ']') {
      return invalidError("']' at position " + std::to_string(at + i + 1) +
                          " closes no '[' (write \"[]]\" for a literal ']')");
    }
    if (c[i] != '[') continue;
    auto end = bracketEnd(c, i, at);
    if (!end) return end.error();
    i = *end;
  }
  return {};
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
  if (text.size() > kMaxPatternBytes) {
    return fail("longer than " + std::to_string(kMaxPatternBytes) + " bytes (PATH_MAX: no tool names a longer path)");
  }
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
    if (component.size() > kMaxComponentBytes) {
      return fail("a component longer than " + std::to_string(kMaxComponentBytes) +
                  " bytes, which no cgroup name is (NAME_MAX)");
    }
    if (component.find("**") != std::string_view::npos && component != "**") {
      return fail("\"**\" must be a whole component");
    }
    if (component == "**") {
      p.exact_ = false;
      // "**/**" matches what "**" does: one state in the matcher, one form for duplicates.
      if (!p.components_.empty() && p.components_.back().kind == Kind::AnyDepth) continue;
      p.components_.push_back({Kind::AnyDepth, std::string(component)});
    } else if (hasWildcard(component)) {
      const auto at = static_cast<std::size_t>(component.data() - text.data());
      if (auto ok = checkGlob(component, at); !ok) return fail(ok.error().context);
      p.exact_ = false;
      const bool onlyWildcards = component.find_first_not_of("*?") == std::string_view::npos;
      (onlyWildcards ? p.specificity_.single : p.specificity_.partial)++;
      for (char c : component)
        p.specificity_.literalChars += (c != '*' && c != '?' && c != '[' && c != ']') ? 1 : 0;
      p.components_.push_back({Kind::Glob, std::string(component)});
    } else {
      p.specificity_.literal++;
      p.specificity_.literalChars += static_cast<int>(component.size());
      p.components_.push_back({Kind::Literal, std::string(component)});
    }
  }
  if (p.components_.size() > kMaxPatternComponents) {
    return fail("more than " + std::to_string(kMaxPatternComponents) + " components (use \"**\" for depth)");
  }
  for (const Component& c : p.components_)
    p.normalised_ += (p.normalised_.empty() ? "" : "/") + c.text;
  return p;
}

bool Pattern::matches(std::string_view path) const {
  return matches(splitPath(path));
}

// The set of pattern positions reachable after each path component, one pass over the path:
// O(pattern components x path components) component comparisons, where backtracking is
// exponential in the number of "**" (30 of them on a 12-deep tree never finished).
// Positions are bits of one word (kMaxPatternComponents), so a match allocates nothing: the walk
// matches every cgroup against every rule.
std::uint64_t Pattern::positionsAfter(const std::vector<std::string_view>& path, std::size_t* comparisons) const {
  const std::size_t m = components_.size();
  std::uint64_t anyDepth = 0;  // positions holding "**"
  for (std::size_t i = 0; i < m; ++i) {
    if (components_[i].kind == Kind::AnyDepth) anyDepth |= std::uint64_t{1} << i;
  }
  // A "**" may match zero components: whoever reaches it reaches the position after it too
  // (runs of "**" were collapsed, so one shift suffices).
  auto close = [&](std::uint64_t states) { return states | ((states & anyDepth) << 1); };
  std::uint64_t at = close(1);
  for (std::string_view name : path) {
    std::uint64_t next = at & anyDepth;  // "**" takes this component and may take more
    for (std::uint64_t rest = at & ~anyDepth; rest != 0; rest &= rest - 1) {
      const auto i = static_cast<std::size_t>(std::countr_zero(rest));
      if (i >= m) break;  // the end position consumes nothing
      const Component& c = components_[i];
      if (comparisons) ++*comparisons;
      if (componentMatches(c.text, c.kind == Kind::Literal, name)) next |= std::uint64_t{1} << (i + 1);
    }
    if (next == 0) return 0;
    at = close(next);
  }
  return at;
}

bool Pattern::matches(const std::vector<std::string_view>& path, std::size_t* comparisons) const {
  return (positionsAfter(path, comparisons) >> components_.size()) & 1;
}

// A position before the end still expects a component: a deeper path may match.
bool Pattern::mayMatchBelow(const std::vector<std::string_view>& path) const {
  const std::uint64_t before = (std::uint64_t{1} << components_.size()) - 1;
  return (positionsAfter(path, nullptr) & before) != 0;
}

}  // namespace reclaimd::policies

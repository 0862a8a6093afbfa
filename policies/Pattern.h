// Cgroup path patterns for per-cgroup rules.
//
// A pattern is a path relative to the cgroup root, '/'-separated: exact components
// ("system.slice"), shell globs within one component ("docker-*.scope", "user-100?.slice",
// "[ab]*"), and "**" for any number (zero included) of whole components ("user.slice/**" is
// user.slice and everything below it). Patterns can never leave the root: absolute paths,
// "." and ".." components, empty components and NUL are rejected when the policy is loaded.
// Exact components are literal and globs take no escapes (FNM_NOESCAPE): a backslash is part of
// the name, as in systemd's "system-systemd\x2dfsck.slice"; "[*]" matches a literal '*'.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/Result.h"

namespace reclaimd::policies {

// How specific a pattern is; compared field by field, more wins. An exact path has only
// literal components and so beats every pattern that matches the same cgroup.
struct Specificity {
  int literal = 0;       // components without wildcards
  int partial = 0;       // components mixing wildcards and text ("docker-*.scope")
  int single = 0;        // "*"-like components: anchor the depth
  int literalChars = 0;  // non-wildcard characters overall

  auto operator<=>(const Specificity&) const = default;
};

// PATH_MAX: no tool names a longer path in one go.
inline constexpr std::size_t kMaxPatternBytes = 4096;
// NAME_MAX: no cgroup name is longer, and a longer glob would only make matching slow.
inline constexpr std::size_t kMaxComponentBytes = 255;
// The matcher keeps its positions in one 64-bit word (the end position included); real
// hierarchies are under 10 levels deep, and "**" covers any depth.
inline constexpr std::size_t kMaxPatternComponents = 63;

class Pattern {
 public:
  // Validates and compiles `text`. Errors: Errc::Invalid saying what is wrong.
  static Result<Pattern> parse(std::string_view text);

  // True when the relative cgroup path ("" for the root) matches. Linear in the path's depth
  // times the pattern's components, whatever the number of "**".
  bool matches(std::string_view path) const;
  // The same for a path already split by splitPath (callers matching many rules split once).
  // `comparisons`, when given, is increased by the component comparisons made: at most
  // components x depth, which the tests hold it to.
  bool matches(const std::vector<std::string_view>& path, std::size_t* comparisons = nullptr) const;
  // True when some cgroup strictly below `path` could match: the walk need not list below a
  // cgroup for which no rule answers true.
  bool mayMatchBelow(const std::vector<std::string_view>& path) const;

  const std::string& text() const { return text_; }
  const Specificity& specificity() const { return specificity_; }
  bool exact() const { return exact_; }
  // The text with runs of "**" collapsed: two rules with the same form match the same cgroups.
  const std::string& normalised() const { return normalised_; }

 private:
  enum class Kind { Literal, Glob, AnyDepth };
  struct Component {
    Kind kind;
    std::string text;
  };
  // The pattern positions live after `path` (bit m: matched whole), 0 once none is.
  std::uint64_t positionsAfter(const std::vector<std::string_view>& path, std::size_t* comparisons) const;

  std::string text_;
  std::string normalised_;
  std::vector<Component> components_;
  Specificity specificity_;
  bool exact_ = true;
};

// Splits a relative path into components; "" gives none.
std::vector<std::string_view> splitPath(std::string_view path);

}  // namespace reclaimd::policies

// Cgroup path patterns for per-cgroup rules.
//
// A pattern is a path relative to the cgroup root, '/'-separated: exact components
// ("system.slice"), shell globs within one component ("docker-*.scope", "user-100?.slice",
// "[ab]*"), and "**" for any number (zero included) of whole components ("user.slice/**" is
// user.slice and everything below it). Patterns can never leave the root: absolute paths,
// "." and ".." components, empty components and NUL are rejected when the policy is loaded.
#pragma once

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

class Pattern {
 public:
  // Validates and compiles `text`. Errors: Errc::Invalid saying what is wrong.
  static Result<Pattern> parse(std::string_view text);

  // True when the relative cgroup path ("" for the root) matches.
  bool matches(std::string_view path) const;

  const std::string& text() const { return text_; }
  const Specificity& specificity() const { return specificity_; }
  bool exact() const { return exact_; }

 private:
  std::string text_;
  std::vector<std::string> components_;
  Specificity specificity_;
  bool exact_ = true;
};

// Splits a relative path into components; "" gives none.
std::vector<std::string_view> splitPath(std::string_view path);

}  // namespace reclaimd::policies

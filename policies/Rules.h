// Which rule governs a cgroup, and why: most specific match wins.
//
// Precedence, in order: (1) more literal components; (2) more components that mix text and
// wildcards ("docker-*.scope" beats "*"); (3) more single-component wildcards ("*" anchors
// depth where "**" does not); (4) more literal characters; (5) the rule listed first. An
// exact path has only literal components, so it beats every pattern matching the same cgroup.
// A cgroup no rule matches inherits its parent's rule ("build.slice" governs the whole slice
// unless a rule matches something inside it); at the top, the machine-wide settings govern.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "policies/Policy.h"

namespace reclaimd::policies {

// True when rule `a` (at index ia) takes precedence over rule `b` (at index ib).
bool outranks(const Rule& a, int ia, const Rule& b, int ib);

// The index of the rule matching `path` itself (relative, "" for the root), -1 for none.
int governingRule(const std::vector<Rule>& rules, std::string_view path);

// True when some rule could match a cgroup strictly below `path`: below a cgroup where none can,
// every descendant inherits its rule, and the walk need not list them.
bool mayMatchBelow(const std::vector<Rule>& rules, std::string_view path);

// The rule that governs `path`: its own match, else its nearest ancestor's (-1: machine-wide).
// `ancestor` is set to the cgroup the rule was matched on.
int inheritedRule(const std::vector<Rule>& rules, std::string_view path, std::string_view* ancestor = nullptr);

// Indices of every rule matching `path`, the governing one first.
std::vector<int> matchingRules(const std::vector<Rule>& rules, std::string_view path);

// Human text for `check-config --explain PATH`: the matching rules in precedence order, why
// the first wins, and the settings that result.
std::string explain(const Policy& policy, std::string_view path);

}  // namespace reclaimd::policies

#include "policies/Rules.h"

#include <fmt/format.h>

#include <algorithm>

namespace reclaimd::policies {

bool outranks(const Rule& a, int ia, const Rule& b, int ib) {
  const Specificity& sa = a.pattern.specificity();
  const Specificity& sb = b.pattern.specificity();
  if (sa != sb) return sa > sb;
  return ia < ib;
}

std::vector<int> matchingRules(const std::vector<Rule>& rules, std::string_view path) {
  std::vector<int> found;
  const auto components = splitPath(path);
  for (int i = 0; i < static_cast<int>(rules.size()); ++i) {
    if (rules[static_cast<std::size_t>(i)].pattern.matches(components)) found.push_back(i);
  }
  std::sort(found.begin(), found.end(), [&](int a, int b) {
    return outranks(rules[static_cast<std::size_t>(a)], a, rules[static_cast<std::size_t>(b)], b);
  });
  return found;
}

int governingRule(const std::vector<Rule>& rules, std::string_view path) {
  int best = -1;
  const auto components = splitPath(path);  // once, not once per rule
  for (int i = 0; i < static_cast<int>(rules.size()); ++i) {
    const Rule& r = rules[static_cast<std::size_t>(i)];
    if (!r.pattern.matches(components)) continue;
    if (best < 0 || outranks(r, i, rules[static_cast<std::size_t>(best)], best)) best = i;
  }
  return best;
}

bool mayMatchBelow(const std::vector<Rule>& rules, std::string_view path) {
  const auto components = splitPath(path);
  return std::any_of(rules.begin(), rules.end(), [&](const Rule& r) { return r.pattern.mayMatchBelow(components); });
}

int inheritedRule(const std::vector<Rule>& rules, std::string_view path, std::string_view* ancestor) {
  for (std::string_view at = path;;) {
    const int rule = governingRule(rules, at);
    if (rule >= 0 || at.empty()) {
      if (ancestor) *ancestor = at;
      return rule;
    }
    const std::size_t slash = at.rfind('/');
    at = slash == std::string_view::npos ? std::string_view() : at.substr(0, slash);
  }
}

namespace {

std::string why(const Rule& winner, const Rule& loser) {
  const Specificity& w = winner.pattern.specificity();
  const Specificity& l = loser.pattern.specificity();
  if (w.literal != l.literal)
    return "more literal components (" + std::to_string(w.literal) + " > " + std::to_string(l.literal) + ")";
  if (w.partial != l.partial) return "more partly literal components";
  if (w.single != l.single) return "more single-component wildcards";
  if (w.literalChars != l.literalChars) return "more literal characters";
  return "listed first";
}

std::string describeRule(const Policy& p, int index) {
  const Rule& r = p.rules[static_cast<std::size_t>(index)];
  // Rules from a drop-in name their file; the main file's keep the short form.
  const std::string file = r.file > 0 && r.file < p.files.size() ? p.files[r.file] + " " : "";
  return "rule " + std::to_string(index + 1) + " (" + file + "line " + std::to_string(r.line) + ", match \"" +
         r.pattern.text() + "\")";
}

}  // namespace

std::string explain(const Policy& policy, std::string_view path) {
  const std::string shown = path.empty() ? "/ (the root)" : std::string(path);
  std::string out = shown + ":\n";
  const auto found = matchingRules(policy.rules, path);
  std::string_view from;
  const int inherited = found.empty() ? inheritedRule(policy.rules, path, &from) : -1;
  if (found.empty() && inherited >= 0) {
    out += "  no rule matches it; it inherits " + describeRule(policy, inherited) + " from " +
           (from.empty() ? std::string("the root") : std::string(from)) + "\n";
  } else if (found.empty()) {
    out += "  no rule matches it or its ancestors: the machine-wide settings govern it\n";
  } else {
    out += "  governed by " + describeRule(policy, found[0]) + "\n";
    for (std::size_t i = 1; i < found.size(); ++i) {
      const Rule& w = policy.rules[static_cast<std::size_t>(found[0])];
      const Rule& l = policy.rules[static_cast<std::size_t>(found[i])];
      out += "  also matches " + describeRule(policy, found[i]) + ", outranked: " + why(w, l) + "\n";
    }
  }
  const Governance g = policy.governance(found.empty() ? inherited : found[0], path.empty());
  out += "  mode " + std::string(toString(g.mode)) + ", floor " + formatBytes(g.floor) + ", steps " +
         formatBytes(g.steps.stepMin) + ".." + formatBytes(g.steps.stepMax) + " (MemTotal/" +
         std::to_string(g.steps.stepDivisor) + "), idle source " + toString(g.idleSource) + ", grace " +
         formatDuration(g.idle.grace) + ", threshold " + fmt::format("{:g}%", g.idle.thresholdPercent) +
         ", trimmed while busy: " + (g.mode == Mode::Gradual && g.trim.enabled ? "yes" : "no") + "\n";
  if (found.empty() && inherited < 0 && g.mode == Mode::Gradual && policy.idle.units && !path.empty()) {
    out += "  judged by its own CPU (idle.units): while the machine is busy, once its own CPU has stayed at or under " +
           fmt::format("{:g}%", g.idle.thresholdPercent) + " of one CPU for " + formatDuration(g.idle.grace) +
           " it is reclaimed to " + formatBytes(g.floor) +
           " (reclaim.cgroup_floor), unless a cgroup above it is quiet too and taken whole\n";
  }
  // Two floors apply below the root, and the reader of a rule's floor should not have to guess
  // which one stops reclaim first.
  if (!path.empty() && g.mode == Mode::Gradual) {
    out += "  floors: this cgroup keeps " + formatBytes(g.floor) + "; the machine keeps " +
           formatBytes(policy.reclaim.floor) +
           " (reclaim.floor) in all, so once the machine's reclaimable cache is down to that, nothing goes lower, "
           "this cgroup's floor included\n";
  }
  return out;
}

}  // namespace reclaimd::policies

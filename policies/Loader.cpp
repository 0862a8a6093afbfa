#include "policies/Loader.h"

#include <yaml-cpp/depthguard.h>
#include <yaml-cpp/yaml.h>

#include <unordered_map>

#include "base/Quantities.h"
#include "policies/Keys.h"
#include "policies/Reader.h"

namespace reclaimd::policies {

namespace {

using std::chrono::milliseconds;

// The limits of machine key `name`, as the reader's typed functions take them.
Limits limitsOf(std::string_view name) {
  const Key* key = findKey(name);
  return key ? key->limits : Limits{};
}
std::uint64_t minBytes(std::string_view name) {
  return static_cast<std::uint64_t>(limitsOf(name).min);
}
std::uint64_t maxBytes(std::string_view name) {
  return static_cast<std::uint64_t>(limitsOf(name).max);
}
milliseconds minSpan(std::string_view name) {
  return milliseconds(static_cast<std::int64_t>(limitsOf(name).min));
}
milliseconds maxSpan(std::string_view name) {
  return milliseconds(static_cast<std::int64_t>(limitsOf(name).max));
}

// Reads one machine key from its section's map into `policy`, parsed by its value's type.
void readKey(Reader& r, const YAML::Node& map, const std::string& section, const Key& key, Policy& policy) {
  const std::string name(key.name.substr(section.empty() ? 0 : section.size() + 1));
  const Limits& l = key.limits;
  std::visit(
      [&](auto ref) {
        auto& out = ref(policy);
        using T = std::decay_t<decltype(out)>;
        if constexpr (std::is_same_v<T, Mode>) r.mode(map, section, name.c_str(), out);
        if constexpr (std::is_same_v<T, bool>) r.boolean(map, section, name.c_str(), out);
        if constexpr (std::is_same_v<T, double>) r.percent(map, section, name.c_str(), out, l.min, l.max);
        if constexpr (std::is_same_v<T, std::uint64_t>) {
          r.bytes(map, section, name.c_str(), out, static_cast<std::uint64_t>(l.min),
                  static_cast<std::uint64_t>(l.max));
        }
        if constexpr (std::is_same_v<T, std::uint32_t>) {
          r.count(map, section, name.c_str(), out, static_cast<std::uint32_t>(l.min),
                  static_cast<std::uint32_t>(l.max));
        }
        if constexpr (std::is_same_v<T, milliseconds>) {
          r.duration(map, section, name.c_str(), out, milliseconds(static_cast<std::int64_t>(l.min)),
                     milliseconds(static_cast<std::int64_t>(l.max)));
        }
      },
      key.field);
}

// Reads every key of `section` ("idle") from its map.
void readSection(Reader& r, const YAML::Node& node, const std::string& section, Policy& policy) {
  std::vector<std::string_view> allowed;
  for (const Key& k : policyKeys()) {
    if (k.name.starts_with(section + ".")) allowed.push_back(k.name.substr(section.size() + 1));
  }
  if (!r.checkMap(node, section, allowed)) return;
  for (const Key& k : policyKeys()) {
    if (k.name.starts_with(section + ".")) readKey(r, node, section, k, policy);
  }
}

// Checks between machine keys (policyKeyOrders), once every file is read: a drop-in may change
// either side.
void checkMachine(Reader& r, const Policy& policy) {
  for (const KeyOrder& o : policyKeyOrders()) {
    const Key* low = findKey(o.low);
    const Key* high = findKey(o.high);
    Policy copy = policy;
    const bool durations = std::holds_alternative<PolicyRef<milliseconds>>(low->field);
    const bool holds = durations ? std::get<PolicyRef<milliseconds>>(low->field)(copy) <=
                                       std::get<PolicyRef<milliseconds>>(high->field)(copy)
                                 : std::get<PolicyRef<std::uint64_t>>(low->field)(copy) <=
                                       std::get<PolicyRef<std::uint64_t>>(high->field)(copy);
    const std::string lowName(o.low), highName(o.high);
    r.order(holds, Side{lowName, showValue(*low, policy), r.written(lowName), "its default"},
            Side{highName, showValue(*high, policy), r.written(highName), "its default"},
            durations ? "longer" : "larger", durations ? "shorter" : "smaller");
  }
}

// A side of a check over a rule key: the rule's own value, or the one it inherits.
Side ruleSide(const Reader& r, const std::string& path, const char* key, const std::string& machineKey,
              std::string value) {
  const std::string own = path + "." + key;
  // The file check: "rules[1]" of an earlier file is another rule.
  const Where* w = r.written(own);
  if (w && w->file == r.file()) return Side{own, std::move(value), w, ""};
  return Side{machineKey, std::move(value), nullptr, "the machine's"};
}

void checkRule(Reader& r, const Rule& rule, const std::string& path) {
  r.order(rule.stepMin <= rule.stepMax, ruleSide(r, path, "step_min", "reclaim.step_min", policySize(rule.stepMin)),
          ruleSide(r, path, "step_max", "reclaim.step_max", policySize(rule.stepMax)), "larger", "smaller");
  r.order(rule.idle.interval <= rule.idle.grace,
          ruleSide(r, path, "interval", "idle.interval", policyDuration(rule.idle.interval)),
          ruleSide(r, path, "grace", "idle.grace", policyDuration(rule.idle.grace)), "longer", "shorter");
}

// Rules seen so far by their normalised match, so a duplicate is found in one lookup.
using SeenRules = std::unordered_map<std::string, std::size_t>;

void readRuleKeys(Reader& r, const YAML::Node& node, const std::string& path, const Policy& base, Rule& rule) {
  r.mode(node, path, "mode", rule.mode);
  if (rule.mode == Mode::DropCache) {
    r.fail(node["mode"], path + ".mode", "dropcache drops every cgroup's cache at once and cannot be a rule's mode");
  }
  r.bytes(node, path, "floor", rule.floor, minBytes("reclaim.cgroup_floor"), maxBytes("reclaim.cgroup_floor"));
  r.bytes(node, path, "step_min", rule.stepMin, minBytes("reclaim.step_min"), maxBytes("reclaim.step_min"));
  r.bytes(node, path, "step_max", rule.stepMax, minBytes("reclaim.step_max"), maxBytes("reclaim.step_max"));
  const Limits divisor = limitsOf("reclaim.step_divisor");
  r.count(node, path, "step_divisor", rule.stepDivisor, static_cast<std::uint32_t>(divisor.min),
          static_cast<std::uint32_t>(divisor.max));
  r.with(node, path, "idle_source", [&](const YAML::Node& v, const std::string& full) {
    auto source = parseIdleSource(v.Scalar());
    if (!source) return r.fail(v, full, "expected system, cgroup or both, got \"" + v.Scalar() + "\"");
    rule.idleSource = *source;
  });
  r.duration(node, path, "grace", rule.idle.grace, minSpan("idle.grace"), maxSpan("idle.grace"));
  const Limits threshold = limitsOf("idle.threshold_percent");
  r.percent(node, path, "threshold_percent", rule.idle.thresholdPercent, threshold.min, threshold.max);
  r.duration(node, path, "interval", rule.idle.interval, minSpan("idle.interval"), maxSpan("idle.interval"));
  r.boolean(node, path, "trim", rule.trim);
  if (node["pressure"] && r.checkMap(node["pressure"], path + ".pressure", {"stall", "window"})) {
    rule.pressureStall = base.pressure.stall;
    rule.pressureWindow = base.pressure.window;
    const std::string p = path + ".pressure";
    r.duration(node["pressure"], p, "window", rule.pressureWindow, minSpan("pressure.window"),
               maxSpan("pressure.window"));
    r.duration(node["pressure"], p, "stall", rule.pressureStall, minSpan("pressure.stall"), maxSpan("pressure.stall"));
    r.order(rule.pressureStall <= rule.pressureWindow,
            ruleSide(r, p, "stall", "pressure.stall", policyDuration(rule.pressureStall)),
            ruleSide(r, p, "window", "pressure.window", policyDuration(rule.pressureWindow)), "longer", "shorter");
  }
}

void readRule(Reader& r, const YAML::Node& node, const std::string& path, Policy& policy, SeenRules& seen) {
  if (!node.IsMap()) return r.fail(node, path, "expected a rule: a mapping with at least \"match\"");
  if (!r.checkMap(node, path,
                  {"match", "mode", "floor", "step_min", "step_max", "step_divisor", "idle_source", "grace",
                   "threshold_percent", "interval", "pressure", "trim"})) {
    return;
  }
  Rule rule;
  rule.line = node.Mark().line + 1;
  rule.file = r.file();
  rule.floor = policy.reclaim.cgroupFloor;
  rule.stepMin = policy.reclaim.stepMin;
  rule.stepMax = policy.reclaim.stepMax;
  rule.stepDivisor = policy.reclaim.stepDivisor;
  rule.idle = policy.idle;
  rule.trim = policy.trim.enabled;
  bool havePattern = false;
  r.with(node, path, "match", [&](const YAML::Node& v, const std::string& full) {
    auto pattern = Pattern::parse(v.Scalar());
    if (!pattern) return r.fail(v, full, pattern.error().message());
    rule.pattern = std::move(*pattern);
    havePattern = true;
  });
  if (!node["match"]) r.fail(node, path, "a rule needs \"match\": the cgroups it governs");
  readRuleKeys(r, node, path, policy, rule);
  checkRule(r, rule, path);
  if (!havePattern) return;
  auto [it, fresh] = seen.emplace(rule.pattern.normalised(), policy.rules.size());
  if (!fresh) {
    const Rule& first = policy.rules[it->second];
    const std::string at =
        (first.file == rule.file ? "" : r.source(first.file) + " ") + "line " + std::to_string(first.line);
    const std::string same = first.pattern.text() == rule.pattern.text() ? "" : " (\"" + first.pattern.text() + "\")";
    return r.fail(node["match"], path + ".match",
                  "\"" + rule.pattern.text() + "\" is already matched by the rule at " + at + same +
                      ": this rule would never apply");
  }
  policy.rules.push_back(std::move(rule));
}

// Reads the machine-wide sections of one file onto `policy`: a later file overrides key by key.
void readSettings(Reader& r, YAML::Node root, Policy& policy) {  // non-const: absent keys read as undefined
  if (!r.checkMap(root, "", {"mode", "idle", "reclaim", "pressure", "trim", "rules"}) || !root.IsMap()) return;
  readKey(r, root, "", *findKey("mode"), policy);
  for (const char* section : {"idle", "reclaim", "pressure", "trim"})
    readSection(r, root[section], section, policy);
}

// The rules lists of every file, appended in order. The count is checked before any rule is read.
void readAllRules(Reader& r, const std::vector<YAML::Node>& roots, Policy& policy) {
  std::size_t total = 0;
  for (std::size_t f = 0; f < roots.size(); ++f) {
    if (!roots[f].IsMap() || !roots[f]["rules"]) continue;
    const YAML::Node rules = roots[f]["rules"];
    r.setFile(f);
    if (rules.IsNull()) continue;
    if (!rules.IsSequence()) {
      r.fail(rules, "rules", "expected a list of rules (\"- match: ...\")");
      return;
    }
    total += rules.size();
    if (total > kMaxRules) {
      r.fail(rules, "rules",
             std::to_string(total) + " rules so far, more than the " + std::to_string(kMaxRules) + " allowed");
      return;
    }
    if (policy.mode == Mode::DropCache && rules.size() > 0) {
      r.fail(rules, "rules",
             "per-cgroup rules need mode gradual or disabled: dropcache drops every cgroup's cache at once");
    }
  }
  SeenRules seen;
  for (std::size_t f = 0; f < roots.size(); ++f) {
    if (!roots[f].IsMap() || !roots[f]["rules"] || roots[f]["rules"].IsNull()) continue;
    const YAML::Node rules = roots[f]["rules"];
    r.setFile(f);
    for (std::size_t i = 0; i < rules.size(); ++i)
      readRule(r, rules[i], "rules[" + std::to_string(i + 1) + "]", policy, seen);
  }
}

// The first line (1-based) whose indentation holds a tab, 0 if none. yaml-cpp's message for a
// tab-indented mapping is only "illegal map value", at a column that does not point at the tab.
int firstTabIndentedLine(const std::string& text) {
  int line = 1;
  bool indent = true;
  for (char c : text) {
    if (c == '\n') {
      ++line;
      indent = true;
    } else if (indent && c == '\t') {
      return line;
    } else if (c != ' ') {
      indent = false;
    }
  }
  return 0;
}

// One file's text as a YAML node; errors go to `r`. A file is one document.
YAML::Node loadDocument(Reader& r, std::size_t file, const std::string& text) {
  r.setFile(file);
  try {
    std::vector<YAML::Node> docs = YAML::LoadAll(text);
    if (docs.size() > 1) {
      const YAML::Mark m = docs[1].Mark();
      r.failFile(file, m.line + 1, m.column + 1,
                 "a second YAML document: a policy file is one document (put more in drop-in files)");
    }
    return docs.empty() ? YAML::Node() : docs[0];
  } catch (const YAML::DeepRecursion& e) {
    r.failFile(file, e.mark.line + 1, e.mark.column + 1,
               "nested too deeply for the YAML reader (a policy needs 4 levels)");
  } catch (const YAML::Exception& e) {
    const int tab = firstTabIndentedLine(text);
    r.failFile(
        file, e.mark.line + 1, e.mark.column + 1,
        "not valid YAML: " + e.msg +
            (tab ? " (line " + std::to_string(tab) + " is indented with a tab: YAML indents with spaces only)" : ""));
  }
  return YAML::Node();
}

Result<Policy> parseChecked(const std::vector<PolicyText>& files, const ParseProgress& progress) {
  std::vector<std::string> sources;
  std::size_t bytes = 0;
  for (const PolicyText& f : files) {
    sources.push_back(f.source);
    bytes += f.text.size();
  }
  if (bytes > kMaxPolicyBytes) {
    return invalidError(sources.front() + ": " + std::to_string(bytes) + " bytes of policy" +
                        (files.size() > 1 ? " with its drop-ins" : "") + ", more than the " +
                        formatBytes(kMaxPolicyBytes) + " allowed");
  }
  Reader r(sources);
  std::vector<YAML::Node> roots;
  for (std::size_t f = 0; f < files.size(); ++f) {
    if (progress) progress(f);
    roots.push_back(loadDocument(r, f, files[f].text));
  }
  if (progress) progress(files.size());
  if (!r.ok()) return r.error();
  Policy policy;
  policy.files = sources;
  for (std::size_t f = 0; f < roots.size(); ++f) {
    r.setFile(f);
    readSettings(r, roots[f], policy);  // machine-wide settings first: rules inherit them
  }
  checkMachine(r, policy);
  readAllRules(r, roots, policy);
  if (!r.ok()) return r.error();
  return policy;
}

}  // namespace

Result<Policy> parsePolicyFiles(const std::vector<PolicyText>& files, const ParseProgress& progress) {
  if (files.empty()) return Policy{};
  try {
    return parseChecked(files, progress);
  } catch (const std::exception& e) {
    // yaml-cpp throws on some documents only when they are walked; memory may run out on a
    // hostile one. Either is a rejected policy, never an abort (a reload keeps the old one).
    return invalidError(files.front().source + ": cannot be read as a policy: " + e.what());
  }
}

Result<Policy> parsePolicy(std::string_view text, const std::string& source) {
  return parsePolicyFiles({PolicyText{source, std::string(text)}});
}

}  // namespace reclaimd::policies

#include "policies/Loader.h"

#include <yaml-cpp/depthguard.h>
#include <yaml-cpp/yaml.h>

#include <unordered_map>

#include "base/Units.h"
#include "policies/Reader.h"

namespace reclaimd::policies {

namespace {

using std::chrono::milliseconds;

// Far above any machine here: a typo guard.
constexpr std::uint64_t kMaxSize = 1024 * kGiB;
// One 10 ms tick in 1,000 CPU-seconds (one tick per 10 s interval on 100 CPUs). Below it a
// threshold only means "not a single tick", which no machine running reclaimd (whose own samples
// cost ticks) reaches; it also keeps absurd values such as the subnormal 1e-320 out.
constexpr double kMinThresholdPercent = 0.001;

std::string showDuration(milliseconds d) {
  return formatDuration(d);
}

// A side of a check over a machine key: written in some file, or its default.
Side machineSide(const Reader& r, const std::string& key, std::string value) {
  return Side{key, std::move(value), r.written(key), "its default"};
}

void readIdle(Reader& r, const YAML::Node& node, IdleSettings& idle) {
  if (!r.checkMap(node, "idle", {"threshold_percent", "grace", "interval", "sample_period", "predict"})) return;
  r.percent(node, "idle", "threshold_percent", idle.thresholdPercent, kMinThresholdPercent, 100.0);
  r.duration(node, "idle", "grace", idle.grace, 1s, 24h);
  r.duration(node, "idle", "interval", idle.interval, 1s, 1h);
  // Under 100 ms a sample would often see no tick change at all.
  r.duration(node, "idle", "sample_period", idle.samplePeriod, 100ms, 1min);
  r.boolean(node, "idle", "predict", idle.predict);
}

void readReclaim(Reader& r, const YAML::Node& node, ReclaimSettings& rec) {
  if (!r.checkMap(node, "reclaim",
                  {"floor", "step_min", "step_max", "step_divisor", "chunk", "compact", "cgroup_floor"})) {
    return;
  }
  r.bytes(node, "reclaim", "floor", rec.floor, 0, kMaxSize);
  // Under 1 MiB a request is lost in the kernel's 32-page reclaim batches.
  r.bytes(node, "reclaim", "step_min", rec.stepMin, kMiB, kMaxSize);
  r.bytes(node, "reclaim", "step_max", rec.stepMax, kMiB, kMaxSize);
  r.count(node, "reclaim", "step_divisor", rec.stepDivisor, 1, 4096);
  r.bytes(node, "reclaim", "chunk", rec.chunk, kMiB, kMaxSize);
  r.boolean(node, "reclaim", "compact", rec.compact);
  r.bytes(node, "reclaim", "cgroup_floor", rec.cgroupFloor, 0, kMaxSize);
}

// The kernel's limits on a trigger: window 500ms..10s, stall within the window.
void readPressureWindow(Reader& r, const YAML::Node& node, const std::string& path, milliseconds& stall,
                        milliseconds& window) {
  r.duration(node, path, "window", window, 500ms, 10s);
  r.duration(node, path, "stall", stall, 1ms, 10s);
}

void readPressure(Reader& r, const YAML::Node& node, PressureSettings& p) {
  if (!r.checkMap(node, "pressure",
                  {"enabled", "stall", "window", "calm", "min_step", "refault_limit", "refault_window"})) {
    return;
  }
  r.boolean(node, "pressure", "enabled", p.enabled);
  readPressureWindow(r, node, "pressure", p.stall, p.window);
  r.duration(node, "pressure", "calm", p.calm, 1s, 1h);
  r.bytes(node, "pressure", "min_step", p.minStep, kMiB, kMaxSize);
  r.bytes(node, "pressure", "refault_limit", p.refaultLimit, 4 * kKiB, kMaxSize);
  r.duration(node, "pressure", "refault_window", p.refaultWindow, 1s, 10min);
}

// Checks between machine keys, once every file is read: a drop-in may change either side.
void checkMachine(Reader& r, const Policy& p) {
  auto d = [](milliseconds v) { return showDuration(v); };
  r.order(p.idle.interval <= p.idle.grace, machineSide(r, "idle.interval", d(p.idle.interval)),
          machineSide(r, "idle.grace", d(p.idle.grace)), "longer", "shorter");
  r.order(p.idle.samplePeriod <= p.idle.interval, machineSide(r, "idle.sample_period", d(p.idle.samplePeriod)),
          machineSide(r, "idle.interval", d(p.idle.interval)), "longer", "shorter");
  r.order(p.reclaim.stepMin <= p.reclaim.stepMax, machineSide(r, "reclaim.step_min", formatBytes(p.reclaim.stepMin)),
          machineSide(r, "reclaim.step_max", formatBytes(p.reclaim.stepMax)), "larger", "smaller");
  r.order(p.pressure.stall <= p.pressure.window, machineSide(r, "pressure.stall", d(p.pressure.stall)),
          machineSide(r, "pressure.window", d(p.pressure.window)), "longer", "shorter");
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
  r.order(rule.stepMin <= rule.stepMax, ruleSide(r, path, "step_min", "reclaim.step_min", formatBytes(rule.stepMin)),
          ruleSide(r, path, "step_max", "reclaim.step_max", formatBytes(rule.stepMax)), "larger", "smaller");
  r.order(rule.idle.interval <= rule.idle.grace,
          ruleSide(r, path, "interval", "idle.interval", showDuration(rule.idle.interval)),
          ruleSide(r, path, "grace", "idle.grace", showDuration(rule.idle.grace)), "longer", "shorter");
}

// Rules seen so far by their normalised match, so a duplicate is found in one lookup.
using SeenRules = std::unordered_map<std::string, std::size_t>;

void readRuleKeys(Reader& r, const YAML::Node& node, const std::string& path, const Policy& base, Rule& rule) {
  r.mode(node, path, "mode", rule.mode);
  if (rule.mode == Mode::DropCache) {
    r.fail(node["mode"], path + ".mode", "dropcache drops every cgroup's cache at once and cannot be a rule's mode");
  }
  r.bytes(node, path, "floor", rule.floor, 0, kMaxSize);
  r.bytes(node, path, "step_min", rule.stepMin, kMiB, kMaxSize);
  r.bytes(node, path, "step_max", rule.stepMax, kMiB, kMaxSize);
  r.count(node, path, "step_divisor", rule.stepDivisor, 1, 4096);
  r.with(node, path, "idle_source", [&](const YAML::Node& v, const std::string& full) {
    auto source = parseIdleSource(v.Scalar());
    if (!source) return r.fail(v, full, "expected system, cgroup or both, got \"" + v.Scalar() + "\"");
    rule.idleSource = *source;
  });
  r.duration(node, path, "grace", rule.idle.grace, 1s, 24h);
  r.percent(node, path, "threshold_percent", rule.idle.thresholdPercent, kMinThresholdPercent, 100.0);
  r.duration(node, path, "interval", rule.idle.interval, 1s, 1h);
  if (node["pressure"] && r.checkMap(node["pressure"], path + ".pressure", {"stall", "window"})) {
    rule.pressureStall = base.pressure.stall;
    rule.pressureWindow = base.pressure.window;
    readPressureWindow(r, node["pressure"], path + ".pressure", rule.pressureStall, rule.pressureWindow);
    const std::string p = path + ".pressure";
    r.order(rule.pressureStall <= rule.pressureWindow,
            ruleSide(r, p, "stall", "pressure.stall", showDuration(rule.pressureStall)),
            ruleSide(r, p, "window", "pressure.window", showDuration(rule.pressureWindow)), "longer", "shorter");
  }
}

void readRule(Reader& r, const YAML::Node& node, const std::string& path, Policy& policy, SeenRules& seen) {
  if (!node.IsMap()) return r.fail(node, path, "expected a rule: a mapping with at least \"match\"");
  if (!r.checkMap(node, path,
                  {"match", "mode", "floor", "step_min", "step_max", "step_divisor", "idle_source", "grace",
                   "threshold_percent", "interval", "pressure"})) {
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
  if (!r.checkMap(root, "", {"mode", "idle", "reclaim", "pressure", "rules"}) || !root.IsMap()) return;
  r.mode(root, "", "mode", policy.mode);
  readIdle(r, root["idle"], policy.idle);
  readReclaim(r, root["reclaim"], policy.reclaim);
  readPressure(r, root["pressure"], policy.pressure);
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
    r.failFile(file, e.mark.line + 1, e.mark.column + 1, "not valid YAML: " + e.msg);
  }
  return YAML::Node();
}

Result<Policy> parseChecked(const std::vector<PolicyText>& files) {
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
  for (std::size_t f = 0; f < files.size(); ++f)
    roots.push_back(loadDocument(r, f, files[f].text));
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

Result<Policy> parsePolicyFiles(const std::vector<PolicyText>& files) {
  if (files.empty()) return Policy{};
  try {
    return parseChecked(files);
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

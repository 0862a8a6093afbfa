#include "policies/Loader.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <charconv>
#include <set>
#include <vector>

#include "base/Files.h"
#include "base/Units.h"

namespace reclaimd::policies {

namespace {

using std::chrono::milliseconds;

// Collects every problem of a file with its position; yaml-cpp stays inside this file.
class Reader {
 public:
  explicit Reader(std::string source) : source_(std::move(source)) {}

  void fail(const YAML::Node& node, const std::string& key, const std::string& problem) {
    const YAML::Mark mark = node.Mark();
    errors_.push_back(source_ + ":" + std::to_string(mark.line + 1) + ":" + std::to_string(mark.column + 1) + ": " +
                      key + ": " + problem);
  }

  // True when `node` is a mapping (or empty); reports unknown and repeated keys.
  bool checkMap(const YAML::Node& node, const std::string& path, std::initializer_list<std::string_view> allowed) {
    if (!node.IsDefined() || node.IsNull()) return true;  // absent or empty: all defaults
    if (!node.IsMap()) {
      fail(node, path.empty() ? "policy" : path, "expected a mapping of keys to values");
      return false;
    }
    std::set<std::string> seen;
    for (auto it = node.begin(); it != node.end(); ++it) {
      const YAML::Node keyNode = it->first;  // a copy: the iterator yields a temporary proxy
      if (!keyNode.IsScalar()) {
        fail(keyNode, path.empty() ? "policy" : path, "keys must be plain words");
        continue;
      }
      const std::string& key = keyNode.Scalar();
      const std::string full = path.empty() ? key : path + "." + key;
      if (!seen.insert(key).second) fail(keyNode, full, "key appears twice");
      bool known = false;
      for (auto a : allowed)
        known = known || a == key;
      if (!known) {
        std::string list;
        for (auto a : allowed)
          list += (list.empty() ? "" : ", ") + std::string(a);
        fail(keyNode, full, "unknown key (known here: " + list + ")");
      }
    }
    return true;
  }

  // Calls `read(value, fullKey)` when `key` is present in the map.
  template <typename Fn>
  void with(const YAML::Node& map, const std::string& path, const char* key, Fn read) {
    if (!map.IsMap()) return;
    YAML::Node value = map[key];
    if (!value.IsDefined()) return;
    const std::string full = path.empty() ? key : path + "." + key;
    if (!value.IsScalar()) {
      fail(value, full, "expected a single value");
      return;
    }
    read(value, full);
  }

  void bytes(const YAML::Node& map, const std::string& path, const char* key, std::uint64_t& out, std::uint64_t min,
             std::uint64_t max) {
    with(map, path, key, [&](const YAML::Node& v, const std::string& full) {
      auto parsed = parseBytes(v.Scalar());
      if (!parsed) return fail(v, full, "expected a size like \"128M\" or \"1G\", got \"" + v.Scalar() + "\"");
      if (*parsed < min || *parsed > max) {
        return fail(v, full,
                    "must be between " + formatBytes(min) + " and " + formatBytes(max) + ", got " + v.Scalar());
      }
      out = *parsed;
    });
  }

  void duration(const YAML::Node& map, const std::string& path, const char* key, milliseconds& out, milliseconds min,
                milliseconds max) {
    with(map, path, key, [&](const YAML::Node& v, const std::string& full) {
      auto parsed = parseDuration(v.Scalar());
      if (!parsed)
        return fail(v, full, "expected a duration like \"500ms\", \"30s\" or \"2m\", got \"" + v.Scalar() + "\"");
      if (*parsed < min || *parsed > max) {
        return fail(v, full,
                    "must be between " + formatDuration(min) + " and " + formatDuration(max) + ", got " + v.Scalar());
      }
      out = *parsed;
    });
  }

  void percent(const YAML::Node& map, const std::string& path, const char* key, double& out, double min, double max) {
    with(map, path, key, [&](const YAML::Node& v, const std::string& full) {
      std::string_view text = v.Scalar();
      if (!text.empty() && text.back() == '%') text.remove_suffix(1);
      double value = 0;
      auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
      if (ec != std::errc() || ptr != text.data() + text.size() || text.empty()) {
        return fail(v, full, "expected a percentage like 0.5, got \"" + v.Scalar() + "\"");
      }
      if (!(value > min && value <= max)) {
        return fail(v, full,
                    "must be above " + fmt::format("{:g}", min) + " and at most " + fmt::format("{:g}", max) +
                        ", got " + v.Scalar());
      }
      out = value;
    });
  }

  void count(const YAML::Node& map, const std::string& path, const char* key, std::uint32_t& out, std::uint32_t min,
             std::uint32_t max) {
    with(map, path, key, [&](const YAML::Node& v, const std::string& full) {
      auto parsed = parseU64(v.Scalar());
      if (!parsed || *parsed < min || *parsed > max) {
        return fail(v, full,
                    "expected a whole number from " + std::to_string(min) + " to " + std::to_string(max) + ", got \"" +
                        v.Scalar() + "\"");
      }
      out = static_cast<std::uint32_t>(*parsed);
    });
  }

  void boolean(const YAML::Node& map, const std::string& path, const char* key, bool& out) {
    with(map, path, key, [&](const YAML::Node& v, const std::string& full) {
      if (v.Scalar() == "true")
        out = true;
      else if (v.Scalar() == "false")
        out = false;
      else
        fail(v, full, "expected true or false, got \"" + v.Scalar() + "\"");
    });
  }

  void mode(const YAML::Node& map, const std::string& path, const char* key, Mode& out) {
    with(map, path, key, [&](const YAML::Node& v, const std::string& full) {
      auto parsed = parseMode(v.Scalar());
      if (!parsed) return fail(v, full, "expected disabled, dropcache or gradual, got \"" + v.Scalar() + "\"");
      out = *parsed;
    });
  }

  bool ok() const { return errors_.empty(); }
  Error error() const {
    std::string all;
    for (const auto& e : errors_)
      all += (all.empty() ? "" : "\n") + e;
    return invalidError(all);
  }

 private:
  std::string source_;
  std::vector<std::string> errors_;
};

void readIdle(Reader& r, const YAML::Node& node, IdleSettings& idle) {
  if (!r.checkMap(node, "idle", {"threshold_percent", "grace", "interval", "sample_period", "predict"})) return;
  r.percent(node, "idle", "threshold_percent", idle.thresholdPercent, 0.0, 100.0);
  r.duration(node, "idle", "grace", idle.grace, 1s, 24h);
  r.duration(node, "idle", "interval", idle.interval, 1s, 1h);
  // Under 100 ms a sample would often see no tick change at all.
  r.duration(node, "idle", "sample_period", idle.samplePeriod, 100ms, 1min);
  r.boolean(node, "idle", "predict", idle.predict);
  if (node.IsMap()) {
    if (idle.interval > idle.grace)
      r.fail(node["interval"] ? node["interval"] : node, "idle.interval", "must not be longer than idle.grace");
    if (idle.samplePeriod > idle.interval) {
      r.fail(node["sample_period"] ? node["sample_period"] : node, "idle.sample_period",
             "must not be longer than idle.interval");
    }
  }
}

void readReclaim(Reader& r, const YAML::Node& node, ReclaimSettings& rec) {
  if (!r.checkMap(node, "reclaim",
                  {"floor", "step_min", "step_max", "step_divisor", "chunk", "compact", "cgroup_floor"})) {
    return;
  }
  constexpr std::uint64_t kMaxSize = 1024 * kGiB;  // far above any machine here: a typo guard
  r.bytes(node, "reclaim", "floor", rec.floor, 0, kMaxSize);
  // Under 1 MiB a request is lost in the kernel's 32-page reclaim batches.
  r.bytes(node, "reclaim", "step_min", rec.stepMin, kMiB, kMaxSize);
  r.bytes(node, "reclaim", "step_max", rec.stepMax, kMiB, kMaxSize);
  r.count(node, "reclaim", "step_divisor", rec.stepDivisor, 1, 4096);
  r.bytes(node, "reclaim", "chunk", rec.chunk, kMiB, kMaxSize);
  r.boolean(node, "reclaim", "compact", rec.compact);
  r.bytes(node, "reclaim", "cgroup_floor", rec.cgroupFloor, 0, kMaxSize);
  if (node.IsMap() && rec.stepMax < rec.stepMin) {
    r.fail(node["step_max"] ? node["step_max"] : node, "reclaim.step_max", "must not be smaller than reclaim.step_min");
  }
}

// The kernel's limits on a trigger: window 500ms..10s, stall within the window.
void readPressureWindow(Reader& r, const YAML::Node& node, const std::string& path, std::chrono::milliseconds& stall,
                        std::chrono::milliseconds& window) {
  r.duration(node, path, "window", window, 500ms, 10s);
  r.duration(node, path, "stall", stall, 1ms, 10s);
  if (node.IsMap() && stall.count() > 0 && window.count() > 0 && stall > window) {
    r.fail(node["stall"] ? node["stall"] : node, path + ".stall", "must not be longer than the window");
  }
}

void readPressure(Reader& r, const YAML::Node& node, PressureSettings& p) {
  if (!r.checkMap(node, "pressure",
                  {"enabled", "stall", "window", "calm", "min_step", "refault_limit", "refault_window"})) {
    return;
  }
  r.boolean(node, "pressure", "enabled", p.enabled);
  readPressureWindow(r, node, "pressure", p.stall, p.window);
  r.duration(node, "pressure", "calm", p.calm, 1s, 1h);
  r.bytes(node, "pressure", "min_step", p.minStep, kMiB, 1024 * kGiB);
  r.bytes(node, "pressure", "refault_limit", p.refaultLimit, 4 * kKiB, 1024 * kGiB);
  r.duration(node, "pressure", "refault_window", p.refaultWindow, 1s, 10min);
}

void readRule(Reader& r, const YAML::Node& node, const std::string& path, const Policy& base, std::vector<Rule>& out) {
  if (!node.IsMap()) {
    r.fail(node, path, "expected a rule: a mapping with at least \"match\"");
    return;
  }
  if (!r.checkMap(node, path,
                  {"match", "mode", "floor", "step_min", "step_max", "step_divisor", "idle_source", "grace",
                   "threshold_percent", "interval", "pressure"})) {
    return;
  }
  Rule rule;
  rule.line = node.Mark().line + 1;
  rule.floor = base.reclaim.cgroupFloor;
  rule.stepMin = base.reclaim.stepMin;
  rule.stepMax = base.reclaim.stepMax;
  rule.stepDivisor = base.reclaim.stepDivisor;
  rule.idle = base.idle;
  bool havePattern = false;
  r.with(node, path, "match", [&](const YAML::Node& v, const std::string& full) {
    auto pattern = Pattern::parse(v.Scalar());
    if (!pattern) return r.fail(v, full, pattern.error().message());
    rule.pattern = std::move(*pattern);
    havePattern = true;
  });
  if (!node["match"]) r.fail(node, path, "a rule needs \"match\": the cgroups it governs");
  r.mode(node, path, "mode", rule.mode);
  if (rule.mode == Mode::DropCache) {
    r.fail(node["mode"], path + ".mode", "dropcache drops every cgroup's cache at once and cannot be a rule's mode");
  }
  constexpr std::uint64_t kMaxSize = 1024 * kGiB;
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
  r.percent(node, path, "threshold_percent", rule.idle.thresholdPercent, 0.0, 100.0);
  r.duration(node, path, "interval", rule.idle.interval, 1s, 1h);
  if (node["pressure"] && r.checkMap(node["pressure"], path + ".pressure", {"stall", "window"})) {
    rule.pressureStall = base.pressure.stall;
    rule.pressureWindow = base.pressure.window;
    readPressureWindow(r, node["pressure"], path + ".pressure", rule.pressureStall, rule.pressureWindow);
  }
  if (rule.stepMax < rule.stepMin) r.fail(node, path + ".step_max", "must not be smaller than step_min");
  if (rule.idle.interval > rule.idle.grace) r.fail(node, path + ".interval", "must not be longer than grace");
  if (!havePattern) return;
  for (const Rule& earlier : out) {
    if (earlier.pattern.text() == rule.pattern.text()) {
      r.fail(node["match"], path + ".match",
             "\"" + rule.pattern.text() + "\" is already matched by the rule at line " + std::to_string(earlier.line) +
                 ": this rule would never apply");
    }
  }
  out.push_back(std::move(rule));
}

void readRules(Reader& r, const YAML::Node& node, Policy& policy) {
  if (!node.IsDefined() || node.IsNull()) return;
  if (!node.IsSequence()) {
    r.fail(node, "rules", "expected a list of rules (\"- match: ...\")");
    return;
  }
  if (policy.mode == Mode::DropCache && node.size() > 0) {
    r.fail(node, "rules",
           "per-cgroup rules need mode gradual or disabled: dropcache drops every cgroup's cache at once");
  }
  for (std::size_t i = 0; i < node.size(); ++i) {
    readRule(r, node[i], "rules[" + std::to_string(i + 1) + "]", policy, policy.rules);
  }
}

}  // namespace

Result<Policy> parsePolicy(std::string_view text, const std::string& source) {
  Reader reader(source);
  Policy policy;
  YAML::Node root;
  try {
    root = YAML::Load(std::string(text));
  } catch (const YAML::Exception& e) {
    return invalidError(source + ":" + std::to_string(e.mark.line + 1) + ":" + std::to_string(e.mark.column + 1) +
                        ": not valid YAML: " + e.msg);
  }
  try {
    if (reader.checkMap(root, "", {"mode", "idle", "reclaim", "pressure", "rules"})) {
      reader.mode(root, "", "mode", policy.mode);
      if (root.IsMap()) {
        // The machine-wide settings first: rules inherit them.
        readIdle(reader, root["idle"], policy.idle);
        readReclaim(reader, root["reclaim"], policy.reclaim);
        readPressure(reader, root["pressure"], policy.pressure);
        readRules(reader, root["rules"], policy);
      }
    }
  } catch (const YAML::Exception& e) {
    // yaml-cpp throws on some malformed documents only when they are walked.
    return invalidError(source + ": " + e.what());
  }
  if (!reader.ok()) return reader.error();
  return policy;
}

Result<Policy> loadPolicyFile(const std::string& path) {
  auto text = readFileAt(AT_FDCWD, path);
  if (!text) return text.error();
  return parsePolicy(*text, path);
}

}  // namespace reclaimd::policies

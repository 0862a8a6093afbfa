#include "controller/Status.h"

#include <fmt/format.h>

#include "base/Units.h"

namespace reclaimd::controller {

namespace {

// Label values escape backslash, quote and newline (the exposition format's rules).
std::string label(const std::string& v) {
  std::string out;
  for (char c : v) {
    if (c == '\\' || c == '"') out.push_back('\\');
    out.push_back(c == '\n' ? 'n' : c);
  }
  return out;
}

}  // namespace

std::string formatStatus(const Status& s) {
  std::string out;
  auto line = [&](const char* key, const std::string& value) { out += fmt::format("{}: {}\n", key, value); };
  line("version", s.version);
  line("mode", s.effectiveMode + (s.effectiveMode == "gradual" ? " (" + s.format + ")" : "") +
                   (s.dryRun ? ", dry run" : "") +
                   (s.effectiveMode != s.requestedMode ? ", policy asks " + s.requestedMode : ""));
  line("reason", s.reason);
  line("uptime", formatDuration(std::chrono::seconds(static_cast<long>(s.uptimeSeconds))));
  line("machine",
       fmt::format("{} (window busy {:.3f}%), {} idle periods", s.idleState, s.windowBusyPercent, s.idlePeriods));
  line("reclaimed",
       fmt::format("{} in {} steps ({} partial, {:.3f}s writing), {} drop_caches, {} compactions, {} floors raised",
                   formatBytes(s.reclaimedBytes), s.steps, s.partial, s.writeSeconds, s.dropcaches, s.compactions,
                   s.floorRaises));
  for (const ScopeStatus& p : s.pressure) {
    out += fmt::format("pressure {}: {}{}, {} events, {} backoffs, step x{}\n", p.scope, p.watch,
                       p.backedOff ? ", BACKED OFF" : "", p.events, p.backoffs, p.stepScale);
  }
  for (const TargetStatus& t : s.targets) {
    out += fmt::format("target {}: rule {}, {}, {}{}, floor {}, reclaimed {} in {} steps{}\n", t.cgroup, t.rule, t.mode,
                       t.idle ? "idle" : "not idle", t.backedOff ? ", backed off" : "", formatBytes(t.floorBytes),
                       formatBytes(t.reclaimedBytes), t.steps, t.lastAction.empty() ? "" : ", last: " + t.lastAction);
  }
  return out;
}

std::string formatMetrics(const Status& s) {
  std::string out;
  auto declare = [&](const char* name, const char* type, const char* help) {
    out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
  };
  // A metric with one unlabelled sample.
  auto single = [&](const char* name, const char* type, const char* help, const std::string& value) {
    declare(name, type, help);
    out += fmt::format("{} {}\n", name, value);
  };
  // A metric with one sample per element of `items`, labelled by `labels(item)`.
  auto each = [&](const char* name, const char* type, const char* help, const auto& items, auto labels, auto value) {
    declare(name, type, help);
    for (const auto& item : items)
      out += fmt::format("{}{{{}}} {}\n", name, labels(item), value(item));
  };
  auto scope = [](const ScopeStatus& p) { return fmt::format("scope=\"{}\"", label(p.scope)); };
  auto cgroup = [](const TargetStatus& t) { return fmt::format("cgroup=\"{}\"", label(t.cgroup)); };

  declare("reclaimd_up", "gauge", "1 while the daemon runs; labels give the effective mode.");
  out += fmt::format("reclaimd_up{{mode=\"{}\",requested=\"{}\",version=\"{}\"}} 1\n", label(s.effectiveMode),
                     label(s.requestedMode), label(s.version));
  single("reclaimd_machine_idle", "gauge", "1 when the machine-wide idle detector judges the machine idle.",
         s.idleState == "idle" ? "1" : "0");
  single("reclaimd_machine_window_busy_percent", "gauge", "Busy share of all CPUs over the grace-long window.",
         fmt::format("{:.4f}", s.windowBusyPercent));
  single("reclaimd_reclaimed_bytes_total", "counter", "Bytes freed by reclaimd since it started, all cgroups.",
         std::to_string(s.reclaimedBytes));
  single("reclaimd_steps_total", "counter", "Reclaim steps written since start.", std::to_string(s.steps));
  single("reclaimd_eagain_total", "counter", "Steps that memory.reclaim ended with EAGAIN (partial success).",
         std::to_string(s.partial));
  single("reclaimd_write_seconds_total", "counter", "Time spent in memory.reclaim writes.",
         fmt::format("{:.6f}", s.writeSeconds));
  single("reclaimd_dropcache_total", "counter", "drop_caches writes.", std::to_string(s.dropcaches));
  single("reclaimd_compactions_total", "counter", "compact_memory writes.", std::to_string(s.compactions));
  single("reclaimd_floor_raises_total", "counter", "Floors raised by refault protection.",
         std::to_string(s.floorRaises));
  each(
      "reclaimd_pressure_events_total", "counter", "PSI trigger events, per scope.", s.pressure,
      [&](const ScopeStatus& p) { return scope(p) + fmt::format(",watch=\"{}\"", p.watch); },
      [](const ScopeStatus& p) { return p.events; });
  each("reclaimd_backoffs_total", "counter", "Backoffs begun under memory pressure, per scope.", s.pressure, scope,
       [](const ScopeStatus& p) { return p.backoffs; });
  each("reclaimd_backed_off", "gauge", "1 while reclaim is stopped in this scope by pressure.", s.pressure, scope,
       [](const ScopeStatus& p) { return p.backedOff ? 1 : 0; });
  each(
      "reclaimd_cgroup_reclaimed_bytes_total", "counter",
      "Bytes freed per reclaim target (a series ends when its cgroup goes).", s.targets,
      [&](const TargetStatus& t) { return cgroup(t) + fmt::format(",rule=\"{}\"", label(t.rule)); },
      [](const TargetStatus& t) { return t.reclaimedBytes; });
  each("reclaimd_cgroup_steps_total", "counter", "Reclaim steps per target.", s.targets, cgroup,
       [](const TargetStatus& t) { return t.steps; });
  each("reclaimd_cgroup_write_seconds_total", "counter", "Time in memory.reclaim writes per target.", s.targets, cgroup,
       [](const TargetStatus& t) { return fmt::format("{:.6f}", t.writeSeconds); });
  each("reclaimd_cgroup_idle", "gauge", "1 when the target is judged idle.", s.targets, cgroup,
       [](const TargetStatus& t) { return t.idle ? 1 : 0; });
  return out;
}

}  // namespace reclaimd::controller

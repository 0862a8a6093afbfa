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
                   (s.dryRun ? ", dry run" : "") + (s.effectiveMode != s.requestedMode ? ", policy asks " + s.requestedMode : ""));
  line("reason", s.reason);
  line("uptime", formatDuration(std::chrono::seconds(static_cast<long>(s.uptimeSeconds))));
  line("machine", fmt::format("{} (window busy {:.3f}%), {} idle periods", s.idleState, s.windowBusyPercent, s.idlePeriods));
  line("reclaimed", fmt::format("{} in {} steps ({} partial, {:.3f}s writing), {} drop_caches, {} compactions, {} floors raised",
                                formatBytes(s.reclaimedBytes), s.steps, s.partial, s.writeSeconds, s.dropcaches,
                                s.compactions, s.floorRaises));
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
  auto metric = [&](const char* name, const char* type, const char* help) {
    out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
  };
  metric("reclaimd_up", "gauge", "1 while the daemon runs; labels give the effective mode.");
  out += fmt::format("reclaimd_up{{mode=\"{}\",requested=\"{}\",version=\"{}\"}} 1\n", label(s.effectiveMode),
                     label(s.requestedMode), label(s.version));
  metric("reclaimd_machine_idle", "gauge", "1 when the machine-wide idle detector judges the machine idle.");
  out += fmt::format("reclaimd_machine_idle {}\n", s.idleState == "idle" ? 1 : 0);
  metric("reclaimd_machine_window_busy_percent", "gauge", "Busy share of all CPUs over the grace-long window.");
  out += fmt::format("reclaimd_machine_window_busy_percent {:.4f}\n", s.windowBusyPercent);
  metric("reclaimd_reclaimed_bytes_total", "counter", "Bytes freed by reclaimd since it started, all cgroups.");
  out += fmt::format("reclaimd_reclaimed_bytes_total {}\n", s.reclaimedBytes);
  metric("reclaimd_steps_total", "counter", "Reclaim steps written since start.");
  out += fmt::format("reclaimd_steps_total {}\n", s.steps);
  metric("reclaimd_eagain_total", "counter", "Steps that memory.reclaim ended with EAGAIN (partial success).");
  out += fmt::format("reclaimd_eagain_total {}\n", s.partial);
  metric("reclaimd_write_seconds_total", "counter", "Time spent in memory.reclaim writes.");
  out += fmt::format("reclaimd_write_seconds_total {:.6f}\n", s.writeSeconds);
  metric("reclaimd_dropcache_total", "counter", "drop_caches writes.");
  out += fmt::format("reclaimd_dropcache_total {}\n", s.dropcaches);
  metric("reclaimd_compactions_total", "counter", "compact_memory writes.");
  out += fmt::format("reclaimd_compactions_total {}\n", s.compactions);
  metric("reclaimd_floor_raises_total", "counter", "Floors raised by refault protection.");
  out += fmt::format("reclaimd_floor_raises_total {}\n", s.floorRaises);
  metric("reclaimd_pressure_events_total", "counter", "PSI trigger events, per scope.");
  for (const ScopeStatus& p : s.pressure) {
    out += fmt::format("reclaimd_pressure_events_total{{scope=\"{}\",watch=\"{}\"}} {}\n", label(p.scope), p.watch, p.events);
  }
  metric("reclaimd_backoffs_total", "counter", "Backoffs begun under memory pressure, per scope.");
  for (const ScopeStatus& p : s.pressure) out += fmt::format("reclaimd_backoffs_total{{scope=\"{}\"}} {}\n", label(p.scope), p.backoffs);
  metric("reclaimd_backed_off", "gauge", "1 while reclaim is stopped in this scope by pressure.");
  for (const ScopeStatus& p : s.pressure) out += fmt::format("reclaimd_backed_off{{scope=\"{}\"}} {}\n", label(p.scope), p.backedOff ? 1 : 0);
  metric("reclaimd_cgroup_reclaimed_bytes_total", "counter", "Bytes freed per reclaim target (a series ends when its cgroup goes).");
  for (const TargetStatus& t : s.targets) {
    out += fmt::format("reclaimd_cgroup_reclaimed_bytes_total{{cgroup=\"{}\",rule=\"{}\"}} {}\n", label(t.cgroup), label(t.rule),
                       t.reclaimedBytes);
  }
  metric("reclaimd_cgroup_steps_total", "counter", "Reclaim steps per target.");
  for (const TargetStatus& t : s.targets) out += fmt::format("reclaimd_cgroup_steps_total{{cgroup=\"{}\"}} {}\n", label(t.cgroup), t.steps);
  metric("reclaimd_cgroup_write_seconds_total", "counter", "Time in memory.reclaim writes per target.");
  for (const TargetStatus& t : s.targets) {
    out += fmt::format("reclaimd_cgroup_write_seconds_total{{cgroup=\"{}\"}} {:.6f}\n", label(t.cgroup), t.writeSeconds);
  }
  metric("reclaimd_cgroup_idle", "gauge", "1 when the target is judged idle.");
  for (const TargetStatus& t : s.targets) out += fmt::format("reclaimd_cgroup_idle{{cgroup=\"{}\"}} {}\n", label(t.cgroup), t.idle ? 1 : 0);
  return out;
}

}  // namespace reclaimd::controller

// formatMetrics: the Prometheus text exposition, following the conventions promtool does not
// check (https://prometheus.io/docs/practices/naming/): base units, 0-1 ratios, _total counters,
// an info metric for the build, process_* for the process, labels that do not change when the
// policy is reordered.
#include <fmt/format.h>

#include "controller/operate/Status.h"

namespace reclaimd::controller {

namespace {

class Exposition {
 public:
  void declare(const char* name, const char* type, const char* help) {
    out_ += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
  }
  template <typename V>
  void single(const char* name, const char* type, const char* help, V value) {
    declare(name, type, help);
    sample(name, "", value);
  }
  // One sample per element of `items`, labelled by `labels(item)`; declared even when empty.
  template <typename Items, typename Labels, typename Value>
  void each(const char* name, const char* type, const char* help, const Items& items, Labels labels, Value value) {
    declare(name, type, help);
    for (const auto& item : items)
      sample(name, labels(item), value(item));
  }
  template <typename V>
  void sample(const char* name, const std::string& labels, V value) {
    out_ += labels.empty() ? fmt::format("{} {}\n", name, value) : fmt::format("{}{{{}}} {}\n", name, labels, value);
  }
  std::string take() { return std::move(out_); }

 private:
  std::string out_;
};

std::string num(double v) {
  return fmt::format("{}", v);  // the shortest text that reads back as the same double
}

void machine(Exposition& e, const Status& s) {
  e.single("reclaimd_up", "gauge", "1 while the daemon runs, 0 once it has stopped.", s.running ? 1 : 0);
  e.declare("reclaimd_build_info", "gauge", "The running build: version and git commit.");
  e.sample("reclaimd_build_info",
           fmt::format("version=\"{}\",commit=\"{}\"", escapeLabel(s.version), escapeLabel(s.commit)), 1);
  e.declare("reclaimd_mode_info", "gauge", "The reclaim mode: what the policy asks and what runs.");
  e.sample("reclaimd_mode_info",
           fmt::format("requested=\"{}\",effective=\"{}\",format=\"{}\",dry_run=\"{}\"", escapeLabel(s.requestedMode),
                       escapeLabel(s.effectiveMode), escapeLabel(s.format), s.dryRun ? "true" : "false"),
           1);
  e.single("reclaimd_machine_idle", "gauge", "1 when the machine-wide idle detector judges the machine idle.",
           s.idleState == "idle" ? 1 : 0);
  e.single("reclaimd_machine_busy_ratio", "gauge",
           "Busy share of all CPUs (0-1) over the grace-long window (during warm-up, over the samples so far).",
           num(s.busyRatio.value_or(s.windowBusyPercent / 100)));
  if (s.reclaimStartsInSeconds) {
    e.single("reclaimd_reclaim_starts_in_seconds", "gauge",
             "Seconds until reclaim would start if the machine stays idle.", num(*s.reclaimStartsInSeconds));
  }
  e.each(
      "reclaimd_busy_cgroup_ratio", "gauge",
      "Own CPU of the cgroups that keep the machine busy (top three), as a share of all CPUs (0-1) over the window.",
      s.busyCgroups, [](const BusyCgroup& b) { return fmt::format("cgroup=\"{}\"", escapeLabel(b.path)); },
      [](const BusyCgroup& b) { return num(b.busyPercent / 100); });
  e.single("reclaimd_idle_periods_total", "counter", "Idle periods entered since start.", s.idlePeriods);
  if (s.lastActionTimestamp) {
    e.single("reclaimd_last_action_timestamp_seconds", "gauge",
             "Unix time of the last reclaim step, drop_caches or compaction (dry run: would-be).",
             num(*s.lastActionTimestamp));
  }
}

void totals(Exposition& e, const Status& s) {
  e.single("reclaimd_reclaimed_bytes_total", "counter", "Bytes freed by reclaimd since it started, all cgroups.",
           s.reclaimedBytes);
  e.single("reclaimd_steps_total", "counter", "Reclaim steps written since start.", s.steps);
  e.single("reclaimd_eagain_total", "counter", "Steps that memory.reclaim ended with EAGAIN (partial success).",
           s.partial);
  e.single("reclaimd_write_seconds_total", "counter", "Time spent in memory.reclaim writes.", num(s.writeSeconds));
  e.single("reclaimd_dropcache_total", "counter", "drop_caches writes.", s.dropcaches);
  e.single("reclaimd_compactions_total", "counter", "compact_memory writes.", s.compactions);
  e.single("reclaimd_floor_raises_total", "counter", "Floors raised by refault protection.", s.floorRaises);
  e.single("reclaimd_trimmed_bytes_total", "counter",
           "Bytes freed by probes of busy targets (trimming; part of reclaimd_reclaimed_bytes_total).", s.trimmedBytes);
  e.single("reclaimd_trim_probes_total", "counter", "Trim probes written to busy targets.", s.trimProbes);
  e.single("reclaimd_trim_holds_total", "counter",
           "Trim holds begun: half of what a target's probes freed came back from disk.", s.trimHolds);
  e.single(
      "reclaimd_units_taken_total", "counter",
      "Quiet cgroups (systemd units, slices, plain cgroups) taken as targets while the machine was busy (idle.units).",
      s.unitsTaken);
  e.single("reclaimd_unit_reclaimed_bytes_total", "counter",
           "Bytes freed from quiet cgroups taken while the machine was busy (part of reclaimd_reclaimed_bytes_total).",
           s.unitReclaimedBytes);
  e.single("reclaimd_would_reclaim_bytes_total", "counter", "Dry run: bytes the steps would have asked for.",
           s.wouldReclaimBytes);
  e.single("reclaimd_would_steps_total", "counter", "Dry run: reclaim steps that would have been written.",
           s.wouldSteps);
}

void pressure(Exposition& e, const Status& s) {
  auto scope = [](const ScopeStatus& p) { return fmt::format("scope=\"{}\"", escapeLabel(p.scope)); };
  e.each(
      "reclaimd_pressure_events_total", "counter", "PSI trigger events, per scope.", s.pressure,
      [&](const ScopeStatus& p) { return scope(p) + fmt::format(",watch=\"{}\"", escapeLabel(p.watch)); },
      [](const ScopeStatus& p) { return p.events; });
  e.each("reclaimd_backoffs_total", "counter", "Backoffs begun under memory pressure, per scope.", s.pressure, scope,
         [](const ScopeStatus& p) { return p.backoffs; });
  e.each("reclaimd_backed_off", "gauge", "1 while reclaim is stopped in this scope by pressure.", s.pressure, scope,
         [](const ScopeStatus& p) { return p.backedOff ? 1 : 0; });
}

void targets(Exposition& e, const Status& s) {
  // Every per-target series carries the same labels: the cgroup and its rule's match text.
  auto labels = [](const TargetStatus& t) {
    return fmt::format("cgroup=\"{}\",rule=\"{}\"", escapeLabel(t.cgroup), escapeLabel(t.rule));
  };
  const auto& all = s.targets;
  e.each("reclaimd_cgroup_reclaimed_bytes_total", "counter",
         "Bytes freed per reclaim target (a series ends when its cgroup goes).", all, labels,
         [](const TargetStatus& t) { return t.reclaimedBytes; });
  e.each("reclaimd_cgroup_steps_total", "counter", "Reclaim steps per target.", all, labels,
         [](const TargetStatus& t) { return t.steps; });
  e.each("reclaimd_cgroup_write_seconds_total", "counter", "Time in memory.reclaim writes per target.", all, labels,
         [](const TargetStatus& t) { return num(t.writeSeconds); });
  e.each("reclaimd_cgroup_idle", "gauge", "1 when the target is judged idle.", all, labels,
         [](const TargetStatus& t) { return t.idle ? 1 : 0; });
  e.each("reclaimd_cgroup_reclaimable_bytes", "gauge", "File cache above the target's floor.", all, labels,
         [](const TargetStatus& t) { return t.reclaimableBytes; });
  e.each("reclaimd_cgroup_floor_bytes", "gauge", "The target's floor: reclaim never takes it below.", all, labels,
         [](const TargetStatus& t) { return t.floorBytes; });
  e.each("reclaimd_cgroup_would_reclaim_bytes_total", "counter", "Dry run: bytes the target's steps would have asked.",
         all, labels, [](const TargetStatus& t) { return t.wouldReclaimBytes; });
  std::vector<TargetStatus> trimmed;
  for (const TargetStatus& t : all) {
    if (!t.trim.empty()) trimmed.push_back(t);
  }
  e.each("reclaimd_cgroup_trim_probe_bytes", "gauge", "Trimming: the next probe's size, while the target is trimmed.",
         trimmed, labels, [](const TargetStatus& t) { return t.trimProbeBytes; });
  e.each("reclaimd_cgroup_trim_cold_estimate_bytes", "gauge",
         "Trimming: cache above the floor, or above where refaults last recurred.", trimmed, labels,
         [](const TargetStatus& t) { return t.trimColdBytes; });
  e.each("reclaimd_cgroup_trim_held", "gauge", "Trimming: 1 while probes are held by recurring refaults.", trimmed,
         labels, [](const TargetStatus& t) { return t.trim == "held" ? 1 : 0; });
  e.each("reclaimd_cgroup_trim_aimed", "gauge",
         "Trimming: 1 while probes go to a quiet cgroup inside the target (status names it), not to the whole.",
         trimmed, labels, [](const TargetStatus& t) { return t.trimAim.empty() ? 0 : 1; });
  std::vector<TargetStatus> acted;
  for (const TargetStatus& t : all) {
    if (t.lastActionTimestamp) acted.push_back(t);
  }
  e.each("reclaimd_cgroup_last_action_timestamp_seconds", "gauge", "Unix time of the target's last step.", acted,
         labels, [](const TargetStatus& t) { return num(*t.lastActionTimestamp); });
}

void process(Exposition& e, const ProcessStatus& p) {
  e.single("process_cpu_seconds_total", "counter", "Total user and system CPU time spent in seconds.",
           num(p.cpuSeconds));
  e.single("process_resident_memory_bytes", "gauge", "Resident memory size in bytes.", p.residentBytes);
  e.single("process_open_fds", "gauge", "Number of open file descriptors.", p.openFds);
  e.single("process_max_fds", "gauge", "Maximum number of open file descriptors.", p.maxFds);
  e.single("process_start_time_seconds", "gauge", "Start time of the process since unix epoch in seconds.",
           num(p.startTimeSeconds));
}

}  // namespace

std::string formatMetrics(const Status& s) {
  Exposition e;
  machine(e, s);
  totals(e, s);
  pressure(e, s);
  targets(e, s);
  if (s.process) process(e, *s.process);
  return e.take();
}

}  // namespace reclaimd::controller

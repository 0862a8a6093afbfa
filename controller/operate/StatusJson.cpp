// `reclaimd status --json`: the Status as one JSON object, for scripts (jq) and monitoring.
#include <nlohmann/json.hpp>

#include <cmath>

#include "controller/operate/Status.h"

namespace reclaimd::controller {

namespace {

using nlohmann::json;

// Fractions go out as 0-1 ratios with six decimals (a ten-thousandth of a percent, the
// precision the log's three-decimal percents have), seconds and Unix times to the millisecond:
// no binary noise such as 0.015000000000000002 for a script to trip over.
double rounded(double v, double scale) {
  return std::round(v * scale) / scale;
}

json ratio(double v) {
  return rounded(v, 1e6);
}

json seconds(double v) {
  return rounded(v, 1e3);
}

json optional(const std::optional<double>& v) {
  return v ? seconds(*v) : json(nullptr);
}

json optionalBytes(const std::optional<std::uint64_t>& v) {
  return v ? json(*v) : json(nullptr);
}

json target(const TargetStatus& t) {
  return json{{"cgroup", t.cgroup},
              {"rule", t.rule},
              {"mode", t.mode},
              {"idle", t.idle},
              {"backed_off", t.backedOff},
              {"floor_bytes", t.floorBytes},
              {"reclaimable_bytes", t.reclaimableBytes},
              {"reclaimed_bytes", t.reclaimedBytes},
              {"trimmed_bytes", t.trimmedBytes},
              {"steps", t.steps},
              {"partial_steps", t.partial},
              {"write_seconds", seconds(t.writeSeconds)},
              {"would_reclaim_bytes", t.wouldReclaimBytes},
              {"waits_for_reclaimable_bytes", optionalBytes(t.waitsForReclaimableBytes)},
              {"would_steps", t.wouldSteps},
              {"last_action", t.lastAction},
              {"last_action_timestamp", optional(t.lastActionTimestamp)},
              {"trim", t.trim.empty() ? json(nullptr)
                                      : json{{"state", t.trim},
                                             {"next_probe_bytes", t.trimProbeBytes},
                                             {"probes_at", t.trimAim},
                                             {"cold_estimate_bytes", t.trimColdBytes},
                                             {"held_until_timestamp", optional(t.trimHeldUntil)},
                                             {"held_until", t.trimHeldUntilText},
                                             {"why", t.trimWhy}}}};
}

json scope(const ScopeStatus& p) {
  return json{{"scope", p.scope},
              {"watch", p.watch},
              {"backed_off", p.backedOff},
              {"resume_at", p.resumeAt},
              {"resume_at_timestamp", optional(p.resumeAtTimestamp)},
              {"events", p.events},
              {"backoffs", p.backoffs},
              {"step_scale", p.stepScale}};
}

json busy(const std::vector<BusyCgroup>& cgroups) {
  json out = json::array();
  for (const BusyCgroup& b : cgroups)
    out.push_back(json{{"path", b.path}, {"busy_ratio", ratio(b.busyPercent / 100)}});
  return out;
}

template <typename T>
void get(const json& j, const char* key, T& out) {
  if (auto it = j.find(key); it != j.end() && !it->is_null()) out = it->get<T>();
}

template <typename T>
void get(const json& j, const char* key, std::optional<T>& out) {
  if (auto it = j.find(key); it != j.end() && !it->is_null()) out = it->get<T>();
}

TargetStatus targetFrom(const json& j) {
  TargetStatus t;
  get(j, "cgroup", t.cgroup);
  get(j, "rule", t.rule);
  get(j, "mode", t.mode);
  get(j, "idle", t.idle);
  get(j, "backed_off", t.backedOff);
  get(j, "floor_bytes", t.floorBytes);
  get(j, "reclaimable_bytes", t.reclaimableBytes);
  get(j, "reclaimed_bytes", t.reclaimedBytes);
  get(j, "trimmed_bytes", t.trimmedBytes);
  get(j, "steps", t.steps);
  get(j, "partial_steps", t.partial);
  get(j, "write_seconds", t.writeSeconds);
  get(j, "would_reclaim_bytes", t.wouldReclaimBytes);
  get(j, "would_steps", t.wouldSteps);
  get(j, "waits_for_reclaimable_bytes", t.waitsForReclaimableBytes);
  get(j, "last_action", t.lastAction);
  get(j, "last_action_timestamp", t.lastActionTimestamp);
  if (auto it = j.find("trim"); it != j.end() && it->is_object()) {
    get(*it, "state", t.trim);
    get(*it, "next_probe_bytes", t.trimProbeBytes);
    get(*it, "probes_at", t.trimAim);
    get(*it, "cold_estimate_bytes", t.trimColdBytes);
    get(*it, "held_until_timestamp", t.trimHeldUntil);
    get(*it, "held_until", t.trimHeldUntilText);
    get(*it, "why", t.trimWhy);
  }
  return t;
}

ScopeStatus scopeFrom(const json& j) {
  ScopeStatus p;
  get(j, "scope", p.scope);
  get(j, "watch", p.watch);
  get(j, "backed_off", p.backedOff);
  get(j, "resume_at", p.resumeAt);
  get(j, "resume_at_timestamp", p.resumeAtTimestamp);
  get(j, "events", p.events);
  get(j, "backoffs", p.backoffs);
  get(j, "step_scale", p.stepScale);
  return p;
}

void machineFrom(const json& j, Status& s) {
  get(j, "version", s.version);
  get(j, "commit", s.commit);
  get(j, "running", s.running);
  get(j, "requested_mode", s.requestedMode);
  get(j, "effective_mode", s.effectiveMode);
  get(j, "format", s.format);
  get(j, "reason", s.reason);
  get(j, "dry_run", s.dryRun);
  get(j, "uptime_seconds", s.uptimeSeconds);
  get(j, "idle_state", s.idleState);
  double ratio = 0;
  get(j, "window_busy_ratio", ratio);
  s.windowBusyPercent = ratio * 100;
  get(j, "busy_ratio", s.busyRatio);
  double threshold = 0;
  get(j, "busy_threshold_ratio", threshold);
  s.busyThresholdPercent = threshold * 100;
  get(j, "waiting_bytes", s.waitingBytes);
  get(j, "reclaim_starts_in_seconds", s.reclaimStartsInSeconds);
  get(j, "idle_periods", s.idlePeriods);
  if (auto it = j.find("busy_cgroups"); it != j.end() && it->is_array()) {
    for (const json& b : *it) {
      BusyCgroup c;
      get(b, "path", c.path);
      double share = 0;
      get(b, "busy_ratio", share);
      c.busyPercent = share * 100;
      s.busyCgroups.push_back(std::move(c));
    }
  }
}

void totalsFrom(const json& j, Status& s) {
  get(j, "reclaimed_bytes", s.reclaimedBytes);
  get(j, "steps", s.steps);
  get(j, "partial_steps", s.partial);
  get(j, "write_seconds", s.writeSeconds);
  get(j, "dropcaches", s.dropcaches);
  get(j, "compactions", s.compactions);
  get(j, "floor_raises", s.floorRaises);
  get(j, "trimmed_bytes", s.trimmedBytes);
  get(j, "trim_probes", s.trimProbes);
  get(j, "trim_holds", s.trimHolds);
  get(j, "units_taken", s.unitsTaken);
  get(j, "unit_reclaimed_bytes", s.unitReclaimedBytes);
  get(j, "would_reclaim_bytes", s.wouldReclaimBytes);
  get(j, "would_steps", s.wouldSteps);
  get(j, "last_action", s.lastAction);
  get(j, "last_action_timestamp", s.lastActionTimestamp);
}

}  // namespace

Result<Status> parseStatusJson(std::string_view text) {
  const json j = json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return parseError("status JSON: not a JSON object");
  Status s;
  // A field of the wrong type throws inside nlohmann; it is an error value here, as every
  // parse error is.
  try {
    machineFrom(j, s);
    totalsFrom(j, s);
    if (auto it = j.find("pressure"); it != j.end() && it->is_array()) {
      for (const json& p : *it)
        s.pressure.push_back(scopeFrom(p));
    }
    if (auto it = j.find("targets"); it != j.end() && it->is_array()) {
      for (const json& t : *it)
        s.targets.push_back(targetFrom(t));
    }
  } catch (const json::exception& e) {
    return parseError(std::string("status JSON: ") + e.what());
  }
  return s;
}

std::string formatStatusJson(const Status& s) {
  json j{{"version", s.version},
         {"commit", s.commit},
         {"running", s.running},
         {"requested_mode", s.requestedMode},
         {"effective_mode", s.effectiveMode},
         {"format", s.format.empty() ? json(nullptr) : json(s.format)},
         {"reason", s.reason},
         {"dry_run", s.dryRun},
         {"uptime_seconds", seconds(s.uptimeSeconds)},
         {"idle_state", s.idleState},
         {"window_busy_ratio", ratio(s.windowBusyPercent / 100)},
         {"busy_ratio", s.busyRatio ? ratio(*s.busyRatio) : json(nullptr)},
         {"busy_threshold_ratio", ratio(s.busyThresholdPercent / 100)},
         {"waiting_bytes", optionalBytes(s.waitingBytes)},
         {"reclaim_starts_in_seconds", optional(s.reclaimStartsInSeconds)},
         {"idle_periods", s.idlePeriods},
         {"busy_cgroups", busy(s.busyCgroups)},
         {"reclaimed_bytes", s.reclaimedBytes},
         {"steps", s.steps},
         {"partial_steps", s.partial},
         {"write_seconds", seconds(s.writeSeconds)},
         {"dropcaches", s.dropcaches},
         {"compactions", s.compactions},
         {"floor_raises", s.floorRaises},
         {"trimmed_bytes", s.trimmedBytes},
         {"trim_probes", s.trimProbes},
         {"trim_holds", s.trimHolds},
         {"units_taken", s.unitsTaken},
         {"unit_reclaimed_bytes", s.unitReclaimedBytes},
         {"would_reclaim_bytes", s.wouldReclaimBytes},
         {"would_steps", s.wouldSteps},
         {"last_action", s.lastAction},
         {"last_action_timestamp", optional(s.lastActionTimestamp)}};
  j["pressure"] = json::array();
  for (const ScopeStatus& p : s.pressure)
    j["pressure"].push_back(scope(p));
  j["targets"] = json::array();
  for (const TargetStatus& t : s.targets)
    j["targets"].push_back(target(t));
  // Invalid UTF-8 (a cgroup name is bytes) becomes U+FFFD rather than an exception.
  return j.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
}

}  // namespace reclaimd::controller

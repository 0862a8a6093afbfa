// What the running daemon is doing, as plain data, and its two renderings: the text of
// `reclaimd status` and the Prometheus text exposition of the metrics. Pure.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace reclaimd::controller {

struct TargetStatus {
  std::string cgroup;  // "/" for the root
  std::string rule;    // "machine" or the rule's number
  std::string mode;
  bool idle = false;
  bool backedOff = false;
  std::uint64_t floorBytes = 0;
  std::uint64_t reclaimedBytes = 0;
  std::uint64_t steps = 0;
  std::uint64_t partial = 0;  // steps that ended in EAGAIN
  double writeSeconds = 0;    // time spent in memory.reclaim writes
  std::string lastAction;     // e.g. "2026-11-30T06:51:27 reclaimed 16.0 MiB"
};

struct ScopeStatus {
  std::string scope;  // "machine" or a cgroup
  std::string watch;  // trigger, polling or off
  bool backedOff = false;
  std::uint64_t events = 0;    // trigger events
  std::uint64_t backoffs = 0;  // backoffs begun
  double stepScale = 1.0;
};

struct Status {
  std::string version;
  std::string requestedMode, effectiveMode, format, reason;
  bool dryRun = false;
  double uptimeSeconds = 0;
  std::string idleState;  // warmup, busy, blocked, idle
  double windowBusyPercent = 0;
  std::uint64_t idlePeriods = 0;
  std::uint64_t reclaimedBytes = 0;  // since start, targets gone since included
  std::uint64_t steps = 0;
  std::uint64_t partial = 0;
  double writeSeconds = 0;
  std::uint64_t dropcaches = 0;
  std::uint64_t compactions = 0;
  std::uint64_t floorRaises = 0;
  std::vector<ScopeStatus> pressure;
  std::vector<TargetStatus> targets;
};

// "key: value" lines, then one line per target and pressure scope.
std::string formatStatus(const Status& status);

// Prometheus text format 0.0.4: reclaimd_* metrics with HELP and TYPE lines.
std::string formatMetrics(const Status& status);

}  // namespace reclaimd::controller

// What the running daemon is doing, as plain data: the engine fills it, controller/operate
// renders it (`reclaimd status`, its JSON, the metrics).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace reclaimd::controller {

// The git commit the binary was built from (`git describe` at configure time), or "unknown".
// Defined in controller/operate, where the build's identity is compiled in; the engine fills a
// Status it is given and never makes one.
const char* buildCommit();

struct TargetStatus {
  std::string cgroup;  // "/" for the root
  // The governing rule's match text, or "machine": a stable label (a list position changes
  // when rules are reordered).
  std::string rule;
  std::string mode;
  bool idle = false;
  bool backedOff = false;
  std::uint64_t floorBytes = 0;
  std::uint64_t reclaimedBytes = 0;
  std::uint64_t steps = 0;
  std::uint64_t partial = 0;                    // steps that ended in EAGAIN
  double writeSeconds = 0;                      // time spent in memory.reclaim writes
  std::string lastAction;                       // e.g. "2026-11-30T06:51:27 reclaimed 16.0 MiB"
  std::uint64_t reclaimableBytes = 0;           // file cache above the floor: what a step could take
  std::uint64_t wouldReclaimBytes = 0;          // dry run: what the steps would have asked for
  std::uint64_t wouldSteps = 0;                 // dry run: steps that would have been written
  std::optional<double> lastActionTimestamp{};  // Unix time (s) of the last step, done or (dry run) would-be
  std::uint64_t trimmedBytes = 0;               // of reclaimedBytes, freed by probes while busy
  // Set while its last step freed (next to) nothing: no step until its reclaimable cache (above
  // the floor, as reclaimableBytes) regrows to this.
  std::optional<std::uint64_t> waitsForReclaimableBytes{};
  // Trimming, while the target is busy: "probing" or "held" ("" when it is not trimmed now).
  std::string trim{};
  std::uint64_t trimProbeBytes = 0;       // the next probe's size
  std::string trimAim{};                  // the quiet cgroup probes are written to ("": the target)
  std::uint64_t trimColdBytes = 0;        // what trimming takes for cold (the cold estimate)
  std::optional<double> trimHeldUntil{};  // Unix time the hold ends
  std::string trimHeldUntilText{};        // the same, as status prints times
  std::string trimWhy{};                  // why the probe is that size, or why it is held
};

struct ScopeStatus {
  std::string scope;  // "machine" or a cgroup
  std::string watch;  // trigger, polling or off
  bool backedOff = false;
  std::uint64_t events = 0;    // trigger events
  std::uint64_t backoffs = 0;  // backoffs begun
  double stepScale = 1.0;
  // While backed off: when reclaim in this scope resumes if no pressure comes meanwhile (each
  // new stall moves it on), as wall-clock text and Unix time (s).
  std::string resumeAt{};
  std::optional<double> resumeAtTimestamp{};
};

// The process's own figures (process_* metrics), read from <proc-root>/self.
struct ProcessStatus {
  double cpuSeconds = 0;  // user + system
  std::uint64_t residentBytes = 0;
  std::uint64_t openFds = 0;
  std::uint64_t maxFds = 0;     // the soft RLIMIT_NOFILE
  double startTimeSeconds = 0;  // Unix time
};

// A cgroup that keeps the machine busy: its own CPU (its children's excluded) as a share of all
// CPUs over the idle window, comparable to the machine's window busy share.
struct BusyCgroup {
  std::string path;  // "/" for the root
  double busyPercent = 0;
};

struct Status {
  std::string version;
  std::string commit = buildCommit();
  bool running = true;  // false in the last metrics written on the way out: reclaimd_up 0
  std::string requestedMode, effectiveMode, format, reason;
  bool dryRun = false;
  double uptimeSeconds = 0;
  std::string idleState;         // warmup, busy, blocked, idle
  double windowBusyPercent = 0;  // over the full grace-long window (0 until it is full)
  // Busy share (0-1) over the samples the detector holds: during warm-up, the part of the
  // window seen so far (which windowBusyPercent does not show). Absent before the first sample.
  std::optional<double> busyRatio;
  double busyThresholdPercent = 0;  // idle.threshold_percent: at or under it the machine is idle
  // The machine's reclaimable memory above reclaim.floor, read when the status was asked for:
  // what waits for the machine to go idle (or for trimming). Absent when it could not be read.
  std::optional<std::uint64_t> waitingBytes;
  // Seconds until reclaim would start if the machine stays as idle as it is now (the rest of
  // the grace period); absent when it is not counting down (busy, blocked) or already idle.
  std::optional<double> reclaimStartsInSeconds;
  std::uint64_t idlePeriods = 0;
  // The cgroups that keep the machine busy, largest first: the engine fills the top three while
  // the machine is not idle (empty until two scans of the tree lie within the window).
  std::vector<BusyCgroup> busyCgroups;
  std::uint64_t reclaimedBytes = 0;  // since start, targets gone since included
  std::uint64_t steps = 0;
  std::uint64_t partial = 0;
  double writeSeconds = 0;
  std::uint64_t dropcaches = 0;
  std::uint64_t compactions = 0;
  std::uint64_t floorRaises = 0;
  // Trimming busy targets (part of reclaimedBytes and steps): probes, what they freed, and the
  // holds refaults put on them.
  std::uint64_t trimmedBytes = 0;
  std::uint64_t trimProbes = 0;
  std::uint64_t trimHolds = 0;
  // Quiet cgroups reclaimed while the machine was busy (idle.units; part of
  // reclaimedBytes and steps): how many were taken, and what their steps freed.
  std::uint64_t unitsTaken = 0;
  std::uint64_t unitReclaimedBytes = 0;
  std::uint64_t wouldReclaimBytes = 0;        // dry run: what the steps would have asked for
  std::uint64_t wouldSteps = 0;               // dry run: steps that would have been written
  std::string lastAction;                     // what was last done (or, dry run, would have been)
  std::optional<double> lastActionTimestamp;  // its Unix time (s)
  std::vector<ScopeStatus> pressure;
  std::vector<TargetStatus> targets;
  std::optional<ProcessStatus> process;
};

// "bg.slice 2.1%, user.slice/x.scope 0.04%": the busy cgroups as one line, names as they are
// (the status text escapes control characters, the event builder quotes its own way).
std::string formatBusyCgroups(const std::vector<BusyCgroup>& busy);

}  // namespace reclaimd::controller

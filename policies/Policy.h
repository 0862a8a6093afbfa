// The policy: what reclaimd may do, and how hard. Built-in defaults reproduce WSL's
// gradual reclaim (microsoft/WSL's autoMemoryReclaim) with its numbers; a YAML file (policies/Loader.h) overrides them.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/Quantities.h"
#include "policies/Pattern.h"

namespace reclaimd::policies {

using namespace std::chrono_literals;

enum class Mode {
  Disabled,   // watch and log, write nothing
  DropCache,  // sync, then drop_caches=3 once per idle period
  Gradual,    // memory.reclaim toward the floor in bounded steps, every idle tick
};

const char* toString(Mode mode);
std::optional<Mode> parseMode(std::string_view text);

struct IdleSettings {
  // Busy share of all CPUs at or under which the machine counts as idle: the seed's 0.5 %.
  double thresholdPercent = 0.5;
  // How long the machine must stay idle before reclaim: the seed's two minutes, so a user
  // who only paused keeps a warm cache. Also the length of the rolling window.
  std::chrono::milliseconds grace = 120s;
  // The span of the "current interval" check. /proc/stat counts 10 ms ticks: over 10 s on one
  // CPU, 0.5 % is 5 ticks, a threshold that means something; over 1-2 s a single tick is
  // already 0.5-1 % (idle was seen to be unreachable with 2 s samples on a 1-vCPU guest).
  std::chrono::milliseconds interval = 10s;
  // How often /proc/stat is read. Fine enough that reclaim starts within a second of the
  // grace period ending; the judgement itself uses the longer spans above.
  std::chrono::milliseconds samplePeriod = 1s;
  // Sample faster while the machine is busy (controller/engine/Decide.h) and wake at the predicted
  // end of the grace period, so reclaim starts within a fraction of a second of it. false:
  // sample only every samplePeriod, as WSL does (with 10s: its timing, for comparisons).
  bool predict = true;
  // Gradual mode, where the machine-wide settings govern: a systemd unit or scope (`*.service`,
  // `*.scope`) whose own CPU stayed at or under the threshold (of one CPU) for a grace period is
  // reclaimed to reclaim.cgroupFloor while the machine stays busy (controller/engine/EngineUnits.cpp),
  // so a finished build's scope is not held hostage by an editor's service.
  bool units = true;
};

struct ReclaimSettings {
  // File cache kept in RAM: the seed's 128 MiB, so the next command still finds its tools warm.
  std::uint64_t floor = 128 * kMiB;
  // A step is MemTotal/stepDivisor clamped to [stepMin, stepMax]: the seed's RAM-scaled steps
  // (MemTotal/32 within 256 MiB..1 GiB).
  std::uint64_t stepMin = 256 * kMiB;
  std::uint64_t stepMax = 1 * kGiB;
  std::uint32_t stepDivisor = 32;
  // A step is written as requests of at most this size, each timed, with signals and pressure
  // checked between them: 64 MiB took 30-60 ms on a TCG guest, so SIGTERM is answered fast.
  std::uint64_t chunk = 64 * kMiB;
  // Compact free memory on entering an idle period and after each step: the host only takes
  // back free blocks of at least page_reporting_order (2 MiB on x86).
  bool compact = true;
  // File cache kept in each governed cgroup below the root whose rule sets no floor: enough for
  // a typical service's executable and libraries to stay warm.
  std::uint64_t cgroupFloor = 16 * kMiB;
};

struct PressureSettings {
  // Watch PSI and back off under memory pressure; refault protection too.
  bool enabled = true;
  // "some" stall time within a window that counts as pressure: 300 ms per 2 s, i.e. tasks
  // waited on memory 15 % of the time, an unmistakable stall that normal page-cache churn of an
  // idle machine never reaches (the VM tests' idle guests stayed at 0).
  std::chrono::milliseconds stall = 300ms;
  // The kernel takes 500ms..10s, but without CAP_SYS_RESOURCE (which the shipped unit does not
  // grant) 6.4+ takes only multiples of 2 s: 2 s registers a trigger there instead of an EINVAL.
  std::chrono::milliseconds window = 2s;
  // Pressure must stay under the threshold this long before reclaim resumes: many windows of
  // normal operation, enough to outlast a workload's start-up.
  std::chrono::milliseconds calm = 30s;
  // Each backoff since the last successful step halves the step, down to this.
  std::uint64_t minStep = 16 * kMiB;
  // Refault protection: more than this much of the cache read back within refaultWindow after a
  // step (beyond the rate before it) means the step cut into the working set.
  std::uint64_t refaultLimit = 1 * kMiB;
  std::chrono::milliseconds refaultWindow = 10s;
};

struct TrimSettings {
  // Return cold cache while the work goes on: a target that is busy (not idle) gets
  // memory.reclaim probes every 6 s as Meta's Senpai sends them, but from half its 1 %,
  // growing while nothing comes back from disk, back to the smallest at a refault, held only
  // where half of what they free comes back (controller/engine/TrimLaw.h).
  // false: the seed's behaviour, reclaim only when idle.
  bool enabled = true;
  // One probe per target per interval: Senpai's 6 s.
  std::chrono::milliseconds interval = 6s;
  // Of what lies above the target's floor, for the first probes. Small: until the kernel has
  // seen the work's hot set read back it cannot tell it from cold cache read as often (MGLRU
  // gives up a hot set read with read() before the work first), and each probe between two of
  // the work's reads takes more of it. Against 1 % and 4 MiB (with the probes' own clean
  // stretch, TrimLaw.h), 7.2 with a hot set read once a minute read it back at 0 % a minute
  // (median of 10 boots) instead of 7.5, and reached its bound sooner (docs/benchmarks.md).
  double percent = 0.5;
  // At least this much per probe: less is lost in the kernel's batches (a 2 MiB folio). 1 MiB
  // (with 0.25 %) quartered 6.12's first-contact stall with a hot set read once a minute, but
  // 7.2's first probes then missed its hot set until a run of doubled probes met it: 1 boot of
  // 10 under 1 % a minute read back instead of 8 (docs/benchmarks.md).
  std::uint64_t minStep = 2 * kMiB;
};

// Whose CPU time decides that a cgroup is idle.
enum class IdleSource {
  System,  // the machine's (/proc/stat), as judged by the machine-wide detector
  Cgroup,  // the cgroup's own (cpu.stat usage_usec, its whole subtree), as a share of one CPU
  Both,    // both must be idle
};

const char* toString(IdleSource source);
std::optional<IdleSource> parseIdleSource(std::string_view text);

// A per-cgroup rule: settings for the cgroups its pattern matches. Keys it does not set are
// the machine-wide ones (idle, reclaim steps); its floor defaults to reclaim.cgroupFloor.
struct Rule {
  Pattern pattern;
  int line = 0;               // where the rule starts in its file (1-based), for --explain
  std::size_t file = 0;       // which file: an index into Policy::files (0: the main one)
  Mode mode = Mode::Gradual;  // Disabled or Gradual: dropcache cannot be aimed at a cgroup
  std::uint64_t floor = 0;
  std::uint64_t stepMin = 0, stepMax = 0;
  std::uint32_t stepDivisor = 0;
  IdleSource idleSource = IdleSource::System;
  IdleSettings idle;
  std::chrono::milliseconds pressureStall{0}, pressureWindow{0};  // the machine's when not set
  bool trim = true;  // trim.enabled for its cgroups (the machine's when not set)
};

// What governs one reclaim target: a rule, or the machine-wide settings.
struct Governance {
  int rule = -1;  // index into Policy::rules; -1: the machine-wide settings
  // The rule's match, normalised ("" for the machine-wide settings): unlike its index, it stays
  // when rules are reordered or inserted, and no two rules share it (the loader refuses that).
  std::string match;
  // The rule's match as written, which status and metrics name the rule by. Kept here, not
  // looked up by `rule`: after a reload that index can name another rule until the next walk.
  std::string text;
  Mode mode = Mode::Gradual;
  std::uint64_t floor = 0;
  ReclaimSettings steps;  // step bounds; other fields as the machine's
  IdleSource idleSource = IdleSource::System;
  IdleSettings idle;
  PressureSettings pressure;
  TrimSettings trim;
};

struct Policy {
  Mode mode = Mode::Gradual;
  IdleSettings idle;
  ReclaimSettings reclaim;
  PressureSettings pressure;
  TrimSettings trim;
  std::vector<Rule> rules;
  // The files it was read from, for messages: the main file, then its drop-ins in order.
  std::vector<std::string> files;

  // The mode that needs the most of the kernel: dropcache as set; gradual when the machine or
  // any rule is gradual; else disabled.
  Mode reclaimMode() const;
  // A busy part of the machine may be trimmed: gradual with trim.enabled, machine-wide or in a
  // gradual rule.
  bool trims() const;

  // Settings of rule `rule` (-1: machine-wide). The machine-wide floor applies at the root;
  // below it, the default is reclaim.cgroupFloor.
  Governance governance(int rule, bool atRoot) const;
};

}  // namespace reclaimd::policies

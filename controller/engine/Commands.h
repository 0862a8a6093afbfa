// What the engine and the shell say to each other: the shell hands Engine::decide an Input (the
// time, what the last command did, the readings the last Output asked for, the pressure events
// that fired with their totals, a pending stop) and gets an Output (at most one command to carry
// out, the reads to take after it, events to log, and when a turn ends, when to wake). The shell
// carries the command out, takes the reads, and calls decide again with both, until an Output
// asks for neither. A turn is planned in phases (TurnPhase, EngineState.h), each asking for what
// the next needs: a tick's input carries the CPU times (tickReads()); its verdict asks for a busy
// scan, the machine's pressure total, the tree when a walk is due and the meminfo its lines
// quote; the units and cgroups judged by their own CPU for their memory.stat and cpu.stat; the
// targets for their totals, then for their cache (and, about to write with rules, for the tree
// again and the cache of the targets it finds); a drop for meminfo around it. A quiet tick reads
// /proc/stat alone. Everything the engine learns comes through here, which is what a recording
// holds.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "base/Clock.h"
#include "base/Event.h"
#include "base/Result.h"
#include "cgroup/ReclaimTypes.h"
#include "controller/engine/Capabilities.h"
#include "controller/engine/Readings.h"
#include "controller/engine/Readings.h"
#include "controller/engine/Scope.h"
#include "psi/TriggerSpec.h"

namespace reclaimd::controller {

// One memory.reclaim request of `bytes` to the cgroup at `path` (relative; "" is the root),
// which must still be the one with `inode` (0 for the root).
struct ReclaimChunk {
  std::string path;
  std::uint64_t inode = 0;
  std::uint64_t bytes = 0;
  cgroup::ReclaimFormat format = cgroup::ReclaimFormat::Plain;
};
// sync (bounded), then drop_caches.
struct DropCaches {};
// compact_memory.
struct Compact {};
// The capability probe again (memory.reclaim answered EINVAL).
struct Reprobe {};
// Open the scope's pressure file and register its trigger (again, if it was open).
struct WatchScope {
  ScopeId id = kMachineScope;
  std::string path;  // the target's cgroup; "" for the machine (/proc first)
  std::uint64_t inode = 0;
  psi::TriggerSpec trigger;
};
// Close the scope's pressure file.
struct UnwatchScope {
  ScopeId id = kMachineScope;
};

using Command = std::variant<ReclaimChunk, DropCaches, Compact, Reprobe, WatchScope, UnwatchScope>;

// The results, one kind per command: a chunk's write; a drop's or a compaction's outcome and
// time; the probe's findings; how a scope is watched (an unwatch has nothing to tell).
struct Written {
  cgroup::ReclaimWrite write;
};
struct Finished {
  Result<void> result;
  std::chrono::nanoseconds took{0};
};
struct Probed {
  Capabilities caps;
};
struct Watched {
  PressureFeed how = PressureFeed::Off;
  std::string why;    // the file and trigger used, or why not
  bool gone = false;  // the cgroup went away meanwhile (no warning: the walk drops it)
};
struct Unwatched {};

using CommandResult = std::variant<std::monostate, Written, Finished, Probed, Watched, Unwatched>;

// A PSI trigger fired on `scope` (or its cgroup was removed: `gone`). The kernel sends no other
// event in this window, so the shell reads the scope's total as it takes the event: the figures
// the engine judges the event by.
struct ScopeEvent {
  ScopeId scope = kMachineScope;
  bool gone = false;
  std::optional<Result<std::uint64_t>> total;  // none when gone
};

struct Input {
  TimePoint now{};
  bool tick = false;     // the timer fired: a turn begins (`readings` holds the CPU times)
  bool stop = false;     // SIGTERM or SIGINT is pending: the turn ends before its next write
  CommandResult result;  // of the command the last Output gave; monostate when it gave none
  Readings readings;     // what the last Output asked to read, read after its command
  std::vector<ScopeEvent> pressure;
};

struct Output {
  std::optional<Command> command;  // none: nothing to do until the next tick or event
  Reads read;                      // to read after the command (if any), for the next decide
  std::optional<TimePoint> wake;   // when a turn ended: the next one is due then
  Events events;
};

const char* commandName(const Command& command);

// An Output the shell answers: a command to carry out or reads to take (else the engine waits).
inline bool asks(const Output& out) {
  return out.command.has_value() || !out.read.empty();
}

}  // namespace reclaimd::controller

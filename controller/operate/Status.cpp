#include "controller/operate/Status.h"

#include <fmt/format.h>

#include "base/Text.h"
#include "base/Quantities.h"

#ifndef RECLAIMD_GIT_COMMIT
#define RECLAIMD_GIT_COMMIT "unknown"
#endif

namespace reclaimd::controller {

namespace {

// The machine's busy share beside the threshold it is judged by.
std::string busyText(const Status& s) {
  const std::string threshold = fmt::format("idle at or under {:g}%", s.busyThresholdPercent);
  if (s.idleState == "warmup" && s.busyRatio)
    return fmt::format("busy {:.1f}% so far, {}", *s.busyRatio * 100, threshold);
  return fmt::format("window busy {:.3f}%, {}", s.windowBusyPercent, threshold);
}

std::string scopeLine(const ScopeStatus& p) {
  std::string backedOff;
  if (p.backedOff) backedOff = ", BACKED OFF" + (p.resumeAt.empty() ? "" : " until " + p.resumeAt);
  return fmt::format("pressure {}: {}{}, {} events, {} backoffs, step x{}\n", printable(p.scope), p.watch, backedOff,
                     p.events, p.backoffs, p.stepScale);
}

// What trimming does with a busy target: probing, paused by heavy work, or held (until when), the next probe, the cold
// estimate, and why.
std::string trimLine(const TargetStatus& t) {
  if (t.trim.empty()) return "";
  return fmt::format("trim {}: {}{}, next probe {}, cold estimate {}{}; {}\n", printable(t.cgroup), t.trim,
                     t.trimAim.empty() ? "" : " at " + printable(t.trimAim), formatSize(t.trimProbeBytes),
                     formatSize(t.trimColdBytes),
                     t.trimHeldUntilText.empty() ? "" : ", until " + t.trimHeldUntilText, printable(t.trimWhy));
}

std::string targetLine(const Status& s, const TargetStatus& t) {
  std::string waits;
  if (t.waitsForReclaimableBytes)
    waits = ", waits for reclaimable to regrow to " + formatSize(*t.waitsForReclaimableBytes) +
            " (its last step freed next to nothing)";
  return fmt::format("target {}: rule {}, {}, {}{}, floor {}, reclaimable {}{}, reclaimed {} in {} steps{}{}\n",
                     printable(t.cgroup), printable(t.rule), t.mode, t.idle ? "idle" : "not idle",
                     t.backedOff ? ", backed off" : "", formatSize(t.floorBytes), formatSize(t.reclaimableBytes), waits,
                     formatSize(t.reclaimedBytes), t.steps,
                     s.dryRun
                         ? fmt::format(", would reclaim {} in {} steps", formatSize(t.wouldReclaimBytes), t.wouldSteps)
                         : "",
                     t.lastAction.empty() ? "" : ", last: " + printable(t.lastAction)) +
         trimLine(t);
}

}  // namespace

std::string printable(std::string_view v) {
  std::string out;
  for (std::size_t i = 0; i < v.size();) {
    const std::size_t n = utf8Length(v, i);
    const auto c = static_cast<unsigned char>(v[i]);
    if (n == 0) {
      out += "\xEF\xBF\xBD";
    } else if (c < 0x20 || c == 0x7F) {
      out += fmt::format("\\x{:02x}", c);
    } else {
      out.append(v.substr(i, n));
    }
    i += n == 0 ? 1 : n;
  }
  return out;
}

const char* buildCommit() {
  return RECLAIMD_GIT_COMMIT;
}

std::string escapeLabel(std::string_view v) {
  std::string out;
  out.reserve(v.size());
  for (std::size_t i = 0; i < v.size();) {
    const std::size_t n = utf8Length(v, i);
    if (n == 0) {
      out += "\xEF\xBF\xBD";  // U+FFFD, the replacement character
      ++i;
      continue;
    }
    const char c = v[i];
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out.append(v.substr(i, n));
    }
    i += n;
  }
  return out;
}

std::string formatStatus(const Status& s) {
  std::string out;
  auto line = [&](const char* key, const std::string& value) { out += fmt::format("{}: {}\n", key, value); };
  line("version", s.version + " (" + s.commit + ")");
  line("mode", s.effectiveMode + (s.effectiveMode == "gradual" ? " (" + s.format + ")" : "") +
                   (s.dryRun ? ", dry run" : "") +
                   (s.effectiveMode != s.requestedMode ? ", policy asks " + s.requestedMode : ""));
  line("reason", printable(s.reason));
  line("uptime", formatDuration(std::chrono::seconds(static_cast<long>(s.uptimeSeconds))));
  line("machine", fmt::format("{} ({}), {} idle periods", s.idleState, busyText(s), s.idlePeriods));
  if (s.idleState != "idle" && !s.busyCgroups.empty())
    line("kept busy by", printable(formatBusyCgroups(s.busyCgroups)) +
                             fmt::format(" (of all CPUs; idle at or under {:g}%)", s.busyThresholdPercent));
  if (s.waitingBytes) line("reclaimable", formatSize(*s.waitingBytes) + " above the machine's floor");
  if (s.reclaimStartsInSeconds) {
    line("reclaim starts in", formatDuration(std::chrono::seconds(static_cast<long>(*s.reclaimStartsInSeconds + 0.5))) +
                                  " if the machine stays idle");
  }
  line("reclaimed",
       fmt::format("{} in {} steps ({} partial, {:.3f}s writing), {} drop_caches, {} compactions, {} floors raised",
                   formatSize(s.reclaimedBytes), s.steps, s.partial, s.writeSeconds, s.dropcaches, s.compactions,
                   s.floorRaises));
  if (s.trimProbes > 0)
    line("trimmed while busy",
         fmt::format("{} in {} probes, {} held by refaults", formatSize(s.trimmedBytes), s.trimProbes, s.trimHolds));
  if (s.unitsTaken > 0)
    line("quiet units",
         fmt::format("{} taken while the machine was busy, {} freed", s.unitsTaken, formatSize(s.unitReclaimedBytes)));
  if (s.dryRun) line("would reclaim", fmt::format("{} in {} steps", formatSize(s.wouldReclaimBytes), s.wouldSteps));
  if (!s.lastAction.empty()) line("last action", printable(s.lastAction));
  for (const ScopeStatus& p : s.pressure)
    out += scopeLine(p);
  for (const TargetStatus& t : s.targets)
    out += targetLine(s, t);
  return out;
}

}  // namespace reclaimd::controller

#include "policies/Policy.h"

#include <algorithm>

namespace reclaimd::policies {

const char* toString(Mode mode) {
  switch (mode) {
    case Mode::Disabled: return "disabled";
    case Mode::DropCache: return "dropcache";
    case Mode::Gradual: return "gradual";
  }
  return "?";
}

std::optional<Mode> parseMode(std::string_view text) {
  if (text == "disabled") return Mode::Disabled;
  if (text == "dropcache") return Mode::DropCache;
  if (text == "gradual") return Mode::Gradual;
  return std::nullopt;
}

const char* toString(IdleSource source) {
  switch (source) {
    case IdleSource::System: return "system";
    case IdleSource::Cgroup: return "cgroup";
    case IdleSource::Both: return "both";
  }
  return "?";
}

std::optional<IdleSource> parseIdleSource(std::string_view text) {
  if (text == "system") return IdleSource::System;
  if (text == "cgroup") return IdleSource::Cgroup;
  if (text == "both") return IdleSource::Both;
  return std::nullopt;
}

Mode Policy::reclaimMode() const {
  if (mode != Mode::Disabled) return mode;
  for (const Rule& r : rules) {
    if (r.mode == Mode::Gradual) return Mode::Gradual;
  }
  return Mode::Disabled;
}

bool Policy::trims() const {
  if (mode == Mode::Gradual && trim.enabled) return true;
  return std::any_of(rules.begin(), rules.end(), [](const Rule& r) { return r.mode == Mode::Gradual && r.trim; });
}

Governance Policy::governance(int rule, bool atRoot) const {
  Governance g;
  g.rule = rule;
  g.steps = reclaim;
  g.idle = idle;
  g.pressure = pressure;
  g.trim = trim;
  if (rule < 0) {
    g.mode = mode;
    g.floor = atRoot ? reclaim.floor : reclaim.cgroupFloor;
    return g;
  }
  const Rule& r = rules[static_cast<std::size_t>(rule)];
  g.match = r.pattern.normalised();
  g.text = r.pattern.text();
  g.mode = r.mode;
  g.floor = r.floor;
  g.steps.stepMin = r.stepMin;
  g.steps.stepMax = r.stepMax;
  g.steps.stepDivisor = r.stepDivisor;
  g.idleSource = r.idleSource;
  g.idle = r.idle;
  if (r.pressureStall.count() > 0) g.pressure.stall = r.pressureStall;
  if (r.pressureWindow.count() > 0) g.pressure.window = r.pressureWindow;
  g.trim.enabled = r.trim;
  return g;
}

}  // namespace reclaimd::policies

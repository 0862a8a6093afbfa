// Which mode actually runs, given the policy's wish and the probe. Pure.
#pragma once

#include <string>

#include "cgroup/ReclaimTypes.h"
#include "controller/engine/Capabilities.h"
#include "policies/Policy.h"

namespace reclaimd::controller {

struct EffectiveMode {
  policies::Mode mode = policies::Mode::Disabled;
  cgroup::ReclaimFormat format = cgroup::ReclaimFormat::SwappinessZero;  // gradual only
  std::string reason;     // one clear sentence for the log and `reclaimd probe`
  bool fellBack = false;  // the policy asked for more than this machine allows
  bool unusable = false;  // the policy asked for reclaim and nothing at all is possible

  bool operator==(const EffectiveMode& o) const { return mode == o.mode && format == o.format; }
};

// gradual: with the swappiness key; without it only when no swap is active (then nothing
// anonymous can be swapped, so a plain request takes file pages only); otherwise dropcache.
// dropcache: when drop_caches is writable. disabled: always. With per-cgroup rules there is no
// dropcache fallback: drop_caches would reach the cgroups the rules protect.
EffectiveMode chooseMode(policies::Mode requested, const Capabilities& caps, bool hasRules = false);

}  // namespace reclaimd::controller

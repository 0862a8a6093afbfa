#include "controller/engine/ModeChoice.h"

namespace reclaimd::controller {

using policies::Mode;

namespace {

EffectiveMode dropCacheOrNothing(const std::string& why, const Capabilities& caps, bool hasRules) {
  EffectiveMode m;
  m.fellBack = true;
  if (hasRules) {
    m.mode = Mode::Disabled;
    m.unusable = true;
    m.reason = why + ", and per-cgroup rules cannot fall back to drop_caches (it would reach the cgroups they protect)";
  } else if (caps.dropCaches) {
    m.mode = Mode::DropCache;
    m.reason = why + "; falling back to dropcache";
  } else {
    m.mode = Mode::Disabled;
    m.unusable = true;
    m.reason = why + ", and drop_caches is not writable (" + caps.dropCachesProblem + "): nothing can be reclaimed";
  }
  return m;
}

}  // namespace

EffectiveMode chooseMode(Mode requested, const Capabilities& caps, bool hasRules) {
  EffectiveMode m;
  switch (requested) {
    case Mode::Disabled:
      m.mode = Mode::Disabled;
      m.reason = "mode disabled by policy: watching only";
      return m;
    case Mode::DropCache:
      if (!caps.dropCaches) {
        m.mode = Mode::Disabled;
        m.unusable = true;
        m.fellBack = true;
        m.reason = "drop_caches is not writable (" + caps.dropCachesProblem + "): nothing can be reclaimed";
        return m;
      }
      m.mode = Mode::DropCache;
      m.reason = "dropcache by policy";
      return m;
    case Mode::Gradual:
      if (!caps.reclaimWritable)
        return dropCacheOrNothing("memory.reclaim is unavailable: " + caps.reclaimProblem, caps, hasRules);
      if (caps.swappinessKey == KeySupport::Supported) {
        m.mode = Mode::Gradual;
        m.format = cgroup::ReclaimFormat::SwappinessZero;
        m.reason = "gradual with swappiness=0: file cache only";
        return m;
      }
      if (!caps.swapActive) {
        m.mode = Mode::Gradual;
        m.format = cgroup::ReclaimFormat::Plain;
        m.reason =
            "gradual without the swappiness key (kernel before 6.11); no swap is active, so reclaim "
            "can only take file cache";
        return m;
      }
      return dropCacheOrNothing(
          "memory.reclaim has no swappiness key (kernel before 6.11) and swap is active, so a plain "
          "request could push anonymous memory to swap",
          caps, hasRules);
  }
  return m;
}

}  // namespace reclaimd::controller

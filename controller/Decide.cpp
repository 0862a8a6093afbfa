#include "controller/Decide.h"

#include "policies/Step.h"

namespace reclaimd::controller {

using policies::Mode;

Plan decide(const IdleVerdict& verdict, const proc::Meminfo& mem, const EffectiveMode& mode,
            const policies::ReclaimSettings& settings, bool compactAvailable, const PeriodState& period) {
  Plan plan;
  if (!verdict.idle()) {
    plan.why = std::string("not idle: ") + toString(verdict.state);
    return plan;
  }
  const bool mayCompact = settings.compact && compactAvailable;
  switch (mode.mode) {
    case Mode::Disabled:
      plan.why = "mode disabled";
      return plan;
    case Mode::DropCache:
      if (period.dropped) {
        plan.why = "already dropped in this idle period";
        return plan;
      }
      plan.dropCache = true;
      plan.compact = mayCompact;
      return plan;
    case Mode::Gradual: {
      const std::uint64_t reclaimable = mem.reclaimable();
      const std::uint64_t step = policies::stepBytes(mem.memTotal, settings);
      const std::uint64_t request = policies::requestBytes(reclaimable, settings.floor, step);
      if (period.stalledAt && reclaimable < *period.stalledAt + settings.chunk) {
        plan.why = "the last step freed nothing; waiting for the cache to regrow";
      } else if (request < policies::kMinRequestBytes) {
        plan.why = "at the floor";
      } else {
        plan.reclaimBytes = request;
      }
      // Compact after every step, and once on entering the period so free memory the
      // workload left behind forms blocks the host can take.
      plan.compact = mayCompact && (plan.reclaimBytes > 0 || !period.compacted);
      return plan;
    }
  }
  return plan;
}

}  // namespace reclaimd::controller

#include "controller/Decide.h"

namespace reclaimd::controller {

DropPlan decideDrop(const IdleVerdict& verdict, const PeriodState& period, bool pressed, bool compact) {
  DropPlan plan;
  if (!verdict.idle() || period.dropped || pressed) return plan;
  plan.dropCache = true;
  plan.compact = compact;
  return plan;
}

}  // namespace reclaimd::controller

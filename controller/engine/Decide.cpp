#include "controller/engine/Decide.h"

#include <algorithm>

namespace reclaimd::controller {

using namespace std::chrono;

namespace {
constexpr int kBusySampleSpeedup = 5;
constexpr nanoseconds kMinSamplePeriod = 100ms;
}  // namespace

DropPlan decideDrop(const IdleVerdict& verdict, const PeriodState& period, bool pressed, bool compact) {
  DropPlan plan;
  if (!verdict.idle() || period.dropped || pressed) return plan;
  plan.dropCache = true;
  plan.compact = compact;
  return plan;
}

nanoseconds fastestSamplePeriod(const policies::IdleSettings& sampling) {
  return std::max(kMinSamplePeriod, nanoseconds(sampling.samplePeriod) / kBusySampleSpeedup);
}

nanoseconds busySamplePeriod(const policies::IdleSettings& sampling, const IdleConfig& window) {
  const auto slack = duration_cast<nanoseconds>(window.grace * (window.thresholdPercent / 100.0));
  const nanoseconds fastest = fastestSamplePeriod(sampling);
  return std::clamp(slack, fastest, std::max(fastest, nanoseconds(sampling.samplePeriod)));
}

}  // namespace reclaimd::controller

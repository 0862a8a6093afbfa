// What trimming says at info: one summary per target every kTrimSummaryEvery instead of a line
// per probe (those are at debug).
#include "controller/engine/Engine.h"

namespace reclaimd::controller {

using namespace std::chrono;

void Engine::summarizeTrims(TimePoint now) {
  std::erase_if(said_.trimSummaries, [&](const auto& entry) { return find(entry.first) == nullptr; });
  for (const TargetState& t : targets_.all) {
    auto [it, fresh] = said_.trimSummaries.try_emplace(t.id, TrimSummary{now, t.trim.probes, t.trim.bytes});
    TrimSummary& last = it->second;
    if (fresh || now - last.at < kTrimSummaryEvery) continue;
    if (t.trim.probes > last.probes) {
      emit(Severity::Info, "trim_summary")
          .add("cgroup", t.label())
          .add("rule", ruleLabel(t))
          .add("over_s", duration<double>(now - last.at).count(), 0)
          .add("probes", t.trim.probes - last.probes)
          .mib("freed_mib", t.trim.bytes - std::min(t.trim.bytes, last.bytes))
          .mib("freed_total_mib", t.trim.bytes)
          .mib("reclaimable_mib", t.lastReclaimable)
          .mib("floor_mib", t.floor());
    }
    last = TrimSummary{now, t.trim.probes, t.trim.bytes};
  }
}

}  // namespace reclaimd::controller

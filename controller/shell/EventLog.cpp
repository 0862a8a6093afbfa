#include "controller/shell/EventLog.h"

#include "base/Log.h"

namespace reclaimd::controller {

using namespace std::chrono;

namespace {

// Per event name, per minute: more than any healthy tree produces (a walk every 5 s), far fewer
// than churn can (unlimited, a churning tree gave 36,746 target_idle lines in 34 s).
constexpr std::uint64_t kPerMinute = 60;
constexpr nanoseconds kSpan = 60s;

// Events about one cgroup are the ones a tree can multiply; machine-wide ones are rare.
bool limited(const Event& e) {
  return e.field("cgroup").has_value() && e.name() != "reclaim_step" && e.name() != "floor_raised";
}

}  // namespace

bool EventLog::allow(const Event& e, TimePoint now) {
  Budget& b = budgets_[e.name()];
  if (now - b.since >= kSpan) {
    if (b.suppressed > 0)
      emit(Event(Severity::Warn, "log_suppressed").add("name", e.name()).add("count", b.suppressed).add("span_s", 60));
    b = Budget{now, 0, 0};
  }
  if (b.said < kPerMinute) {
    ++b.said;
    return true;
  }
  ++b.suppressed;
  return false;
}

void EventLog::write(const Events& events, TimePoint now) {
  for (const Event& e : events) {
    // An event below the log level is never written: it must not spend the budget of the ones
    // that are (debug chunk lines made warnings say lines were suppressed that nobody asked for).
    if (!logs(e.severity())) continue;
    if (limited(e) && !allow(e, now)) continue;
    emit(e);
  }
}

}  // namespace reclaimd::controller

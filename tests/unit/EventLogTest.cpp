// The per-target rate limit: cgroup churn can give tens of thousands of target_idle lines in half
// a minute; machine-wide events and the steps themselves are never limited.
#include <gtest/gtest.h>

#include <string>

#include "controller/shell/EventLog.h"
#include "tests/unit/CapturedLog.h"

namespace reclaimd::controller {
namespace {

using namespace std::chrono_literals;

using testing::CapturedLog;

Events many(const char* name, int n, bool withCgroup) {
  Events events;
  for (int i = 0; i < n; ++i) {
    Event e(Severity::Warn, name);
    if (withCgroup) e.add("cgroup", "churn/c" + std::to_string(i));
    events.push_back(e);
  }
  return events;
}

TEST(EventLog, PerTargetEventsAreLimitedPerNameAndTheRestCounted) {
  CapturedLog log;
  EventLog events;
  const TimePoint t0{};
  events.write(many("target_idle", 1000, true), t0);
  events.write(many("read_failed", 10, true), t0 + 1s);
  EXPECT_EQ(log.count("event=target_idle"), 60) << "60 a minute per event name";
  EXPECT_EQ(log.count("event=read_failed"), 10) << "another name has its own budget";
  EXPECT_EQ(log.count("log_suppressed"), 0) << "said once the minute is over";

  events.write(many("target_idle", 1, true), t0 + 60s);
  EXPECT_EQ(log.count("event=log_suppressed name=target_idle count=940 span_s=60"), 1);
  EXPECT_EQ(log.count("event=target_idle"), 61) << "a new minute, a new budget";
}

TEST(EventLog, MachineWideEventsAndStepsAreNeverLimited) {
  CapturedLog log;
  EventLog events;
  const TimePoint t0{};
  events.write(many("idle_entered", 500, false), t0);
  events.write(many("reclaim_step", 500, true), t0);
  events.write(many("floor_raised", 100, true), t0);
  EXPECT_EQ(log.count("event=idle_entered"), 500);
  EXPECT_EQ(log.count("event=reclaim_step"), 500);
  EXPECT_EQ(log.count("event=floor_raised"), 100);
  EXPECT_EQ(log.count("log_suppressed"), 0);
}

TEST(EventLog, EventsBelowTheLogLevelSpendNoBudget) {
  CapturedLog log;  // at info
  EventLog events;
  const TimePoint t0{};
  Events chunks;
  for (int i = 0; i < 500; ++i)
    chunks.push_back(Event(Severity::Debug, "reclaim_chunk").add("cgroup", "app.slice"));
  events.write(chunks, t0);
  events.write(chunks, t0 + 61s);
  EXPECT_EQ(log.count("log_suppressed"), 0) << "nothing that would have been written was held back";
  events.write(many("target_idle", 1, true), t0 + 62s);
  EXPECT_EQ(log.count("event=target_idle"), 1);
}

}  // namespace
}  // namespace reclaimd::controller

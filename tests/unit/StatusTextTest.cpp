// The status as an administrator reads it: sizes in one form, shares beside the threshold they
// are judged by, why a target waits and until when a backoff lasts, and JSON a script can
// compare without binary noise.
#include <gtest/gtest.h>

#include "base/Quantities.h"
#include "controller/operate/Status.h"

namespace reclaimd::testing {
namespace {

using namespace controller;

Status busyMachine() {
  Status s;
  s.version = "0.1.0";
  s.effectiveMode = s.requestedMode = "gradual";
  s.format = "swappiness";
  s.idleState = "busy";
  s.windowBusyPercent = 1.5000000000000002;
  s.busyThresholdPercent = 0.5;
  s.busyCgroups = {{"bg.slice", 1.5000000000000002}, {"x.scope", 0.07}};
  s.waitingBytes = 1669426 * kKiB;
  s.writeSeconds = 0.30000000000000004;
  s.uptimeSeconds = 61.123456789;
  s.lastAction = "12:00:01 reclaimed 0 B from /";
  s.pressure = {ScopeStatus{"machine", "trigger", true, 3, 1, 0.5, "12:01:30", 1090.4999}};
  TargetStatus t;
  t.cgroup = "/";
  t.rule = "machine";
  t.mode = "gradual";
  t.idle = true;
  t.floorBytes = 128 * kMiB;
  t.reclaimableBytes = 1669426 * kKiB;
  t.reclaimedBytes = 16 * kMiB + 3 * kKiB;
  t.waitsForReclaimableBytes = 1669426 * kKiB + 64 * kMiB;
  s.targets = {t};
  return s;
}

TEST(StatusSizes, OneHumanForm) {
  EXPECT_EQ(formatSize(0), "0 B");
  EXPECT_EQ(formatSize(1023), "1023 B");
  EXPECT_EQ(formatSize(1669426 * kKiB), "1.6 GiB");
  EXPECT_EQ(formatSize(128 * kMiB), "128.0 MiB");
  EXPECT_EQ(formatSize(1536 * kKiB), "1.5 MiB");
  EXPECT_EQ(formatSizeSigned(-3 * static_cast<std::int64_t>(kMiB)), "-3.0 MiB");
  EXPECT_EQ(formatSizeSigned(INT64_MIN), "-8388608.0 TiB");
}

TEST(StatusSizes, TheTextNeverMixesExactAndRoundedForms) {
  const std::string t = formatStatus(busyMachine());
  for (const char* part : {"floor 128.0 MiB", "reclaimable 1.6 GiB", "reclaimed 16.0 MiB in", "reclaimed: 0 B in"})
    EXPECT_NE(t.find(part), std::string::npos) << part << "\n" << t;
  EXPECT_EQ(t.find("KiB"), std::string::npos) << t;
}

TEST(StatusExplains, SharesBesideTheThreshold) {
  const std::string t = formatStatus(busyMachine());
  EXPECT_NE(t.find("machine: busy (window busy 1.500%, idle at or under 0.5%)"), std::string::npos) << t;
  EXPECT_NE(t.find("kept busy by: bg.slice 1.5%, x.scope 0.07% (of all CPUs; idle at or under 0.5%)\n"),
            std::string::npos)
      << t;
  EXPECT_NE(t.find("reclaimable: 1.6 GiB above the machine's floor\n"), std::string::npos) << t;
}

TEST(StatusExplains, WaitsAndBackoffsSayUntilWhen) {
  const std::string t = formatStatus(busyMachine());
  EXPECT_NE(t.find("pressure machine: trigger, BACKED OFF until 12:01:30,"), std::string::npos) << t;
  EXPECT_NE(t.find(", waits for reclaimable to regrow to 1.7 GiB (its last step freed next to nothing)"),
            std::string::npos)
      << t;
  Status calm = busyMachine();
  calm.pressure[0] = ScopeStatus{"machine", "trigger"};
  calm.targets[0].waitsForReclaimableBytes.reset();
  const std::string c = formatStatus(calm);
  EXPECT_EQ(c.find("BACKED OFF"), std::string::npos);
  EXPECT_EQ(c.find("regrow"), std::string::npos);
}

TEST(StatusJsonValues, RatiosRoundedAndConsistent) {
  const std::string j = formatStatusJson(busyMachine());
  for (const char* field :
       {"\"window_busy_ratio\": 0.015,", "\"busy_threshold_ratio\": 0.005,", "\"busy_ratio\": 0.015,",
        "\"busy_ratio\": 0.0007,", "\"write_seconds\": 0.3\n", "\"uptime_seconds\": 61.123,",
        "\"resume_at\": \"12:01:30\",", "\"resume_at_timestamp\": 1090.5,", "\"waiting_bytes\": 1709492224,",
        "\"waits_for_reclaimable_bytes\": 1776601088,"}) {
    EXPECT_NE(j.find(field), std::string::npos) << field << "\n" << j;
  }
  EXPECT_EQ(j.find("00000"), std::string::npos) << "no binary noise: " << j;
  EXPECT_EQ(j.find("_pct"), std::string::npos) << "one unit for shares: ratios 0-1";
  auto back = parseStatusJson(j);
  ASSERT_TRUE(back.ok()) << back.error().message();
  EXPECT_EQ(formatStatus(*back), formatStatus(busyMachine()));
}

// A busy machine trimmed with its probes aimed at the cgroup whose work ended: the text and the
// JSON say where they go (and the JSON reads back to the same text), the metrics that they do.
TEST(StatusExplains, TrimmingSaysWhereItsProbesGo) {
  Status s = busyMachine();
  TargetStatus& t = s.targets[0];
  t.idle = false;
  t.waitsForReclaimableBytes.reset();
  t.trim = "probing";
  t.trimAim = "work.slice";
  t.trimProbeBytes = 8 * kMiB;
  t.trimColdBytes = 300 * kMiB;
  t.trimWhy = "probes go to work.slice, quiet since the last scan";
  const std::string text = formatStatus(s);
  EXPECT_NE(text.find("trim /: probing at work.slice, next probe 8.0 MiB, cold estimate 300.0 MiB; probes go to"),
            std::string::npos)
      << text;
  const std::string j = formatStatusJson(s);
  EXPECT_NE(j.find("\"probes_at\": \"work.slice\""), std::string::npos) << j;
  auto back = parseStatusJson(j);
  ASSERT_TRUE(back.ok()) << back.error().message();
  EXPECT_EQ(formatStatus(*back), text);
  const std::string aimed = "\nreclaimd_cgroup_trim_aimed{cgroup=\"/\",rule=\"machine\"} ";
  EXPECT_NE(formatMetrics(s).find(aimed + "1\n"), std::string::npos) << formatMetrics(s);
  t.trimAim.clear();
  EXPECT_NE(formatStatus(s).find("trim /: probing, next probe"), std::string::npos) << "the whole: no 'at'";
  EXPECT_NE(formatMetrics(s).find(aimed + "0\n"), std::string::npos);
}

}  // namespace
}  // namespace reclaimd::testing

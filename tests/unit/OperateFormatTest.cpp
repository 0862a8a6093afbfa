// The pure side of operating reclaimd: HTTP requests, label escaping, the metrics' conventions,
// the status JSON, the process_* parsers, the command line's argument order, the watchdog clamp.
#include <gtest/gtest.h>

#include <cstdlib>

#include "controller/cli/Cli.h"
#include "controller/operate/Http.h"
#include "controller/operate/Notify.h"
#include "controller/operate/ProcessStats.h"
#include "controller/operate/Status.h"

namespace reclaimd::testing {
namespace {

using namespace std::chrono_literals;
using namespace controller;

TEST(Http, RequestLines) {
  struct Case {
    const char* in;
    bool complete;
    const char* method;
    const char* target;
  };
  for (const Case& c :
       {Case{"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n", true, "GET", "/metrics"},
        Case{"GET /metrics HTTP/1.1\nHost: x\n\n", true, "GET", "/metrics"},
        Case{"HEAD /metrics?a=b HTTP/1.0\r\n\r\n", true, "HEAD", "/metrics?a=b"},
        Case{"GET /metrics HTTP/1.1\r\nHost: x\r\n", false, "", ""}, Case{"GET /metr", false, "", ""}}) {
    auto r = parseHttpRequest(c.in);
    ASSERT_TRUE(r.ok()) << c.in;
    ASSERT_EQ(r->has_value(), c.complete) << c.in;
    if (!c.complete) continue;
    EXPECT_EQ((*r)->method, c.method);
    EXPECT_EQ((*r)->target, c.target);
  }
  for (const char* bad : {"GET\r\n\r\n", "GET /metrics\r\n\r\n", " /metrics HTTP/1.1\r\n\r\n", "GET  HTTP/1.1\n\n",
                          "GET /met\rrics HTTP/1.1\n\n", "G\x01T /metrics HTTP/1.1\n\n", "GET /m\x7f HTTP/1.1\n\n"}) {
    EXPECT_FALSE(parseHttpRequest(bad).ok()) << bad;
  }
}

TEST(Http, Responses) {
  const std::string head = httpResponse({"HEAD", "/metrics"}, "abc\n");
  EXPECT_EQ(head.rfind("HTTP/1.1 200 OK\r\n", 0), 0u);
  EXPECT_NE(head.find("Content-Length: 4\r\n"), std::string::npos);
  EXPECT_EQ(head.find("abc"), std::string::npos);
  EXPECT_EQ(httpResponse({"GET", "/metrics"}, "abc\n").substr(httpResponse({"GET", "/metrics"}, "abc\n").size() - 4),
            "abc\n");
  EXPECT_EQ(httpResponse({"GET", "/"}, "").rfind("HTTP/1.1 404", 0), 0u);
  EXPECT_EQ(httpResponse({"POST", "/metrics"}, "").rfind("HTTP/1.1 405", 0), 0u);
  EXPECT_FALSE(wantsMetrics({"POST", "/metrics"}));
}

TEST(Metrics, LabelEscaping) {
  EXPECT_EQ(escapeLabel("a\\b\"c\nd"), "a\\\\b\\\"c\\nd");
  EXPECT_EQ(escapeLabel("caf\xC3\xA9"), "caf\xC3\xA9");  // valid UTF-8 stays
  EXPECT_EQ(escapeLabel("a\xFFz"), "a\xEF\xBF\xBDz");
  EXPECT_EQ(escapeLabel("\xC3"), "\xEF\xBF\xBD");                                  // truncated sequence
  EXPECT_EQ(escapeLabel("\xC0\xAF"), "\xEF\xBF\xBD\xEF\xBF\xBD");                  // overlong '/'
  EXPECT_EQ(escapeLabel("\xED\xA0\x80"), "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");  // a surrogate
}

Status sample() {
  Status s;
  s.version = "0.1.0";
  s.commit = "abc123";
  s.requestedMode = s.effectiveMode = "gradual";
  s.format = "swappiness=0";
  s.idleState = "warmup";
  s.windowBusyPercent = 0;
  s.busyRatio = 0.432;
  s.busyThresholdPercent = 0.5;
  s.reclaimStartsInSeconds = 37;
  s.dryRun = true;
  s.wouldReclaimBytes = 64 << 20;
  s.wouldSteps = 2;
  s.trimmedBytes = 48 * 1024 * 1024;
  s.trimProbes = 12;
  s.trimHolds = 1;
  s.unitsTaken = 2;
  s.unitReclaimedBytes = 300 << 20;
  s.lastAction = "would reclaim 32.0 MiB";
  s.lastActionTimestamp = 1764532800.5;
  s.pressure.push_back({"machine", "trigger", false, 3, 1, 0.5});
  TargetStatus t{"build.slice/a\nb", "build.slice/**", "gradual", true, false, 128 << 20, 99, 2, 1, 0.25, ""};
  t.reclaimableBytes = 512 << 20;
  t.lastActionTimestamp = 1764532800.5;
  s.targets.push_back(t);
  s.process = ProcessStatus{1.5, 4096, 12, 1024, 1764530000};
  return s;
}

TEST(Metrics, Conventions) {
  const std::string m = formatMetrics(sample());
  auto has = [&](const std::string& text) { return m.find(text) != std::string::npos; };
  EXPECT_TRUE(has("\nreclaimd_up 1\n")) << m;
  EXPECT_TRUE(has("reclaimd_build_info{version=\"0.1.0\",commit=\"abc123\"} 1\n"));
  EXPECT_TRUE(has("reclaimd_machine_busy_ratio 0.432\n")) << "a 0-1 ratio, during warm-up the share so far";
  EXPECT_FALSE(has("percent"));
  EXPECT_TRUE(has("reclaimd_reclaim_starts_in_seconds 37\n"));
  EXPECT_TRUE(has("reclaimd_would_reclaim_bytes_total 67108864\n"));
  EXPECT_TRUE(has("reclaimd_trimmed_bytes_total 50331648\n"));
  EXPECT_TRUE(has("reclaimd_trim_probes_total 12\n"));
  EXPECT_TRUE(has("reclaimd_trim_holds_total 1\n"));
  EXPECT_TRUE(has("reclaimd_units_taken_total 2\n"));
  EXPECT_TRUE(has("reclaimd_unit_reclaimed_bytes_total 314572800\n"));
  EXPECT_TRUE(has("reclaimd_last_action_timestamp_seconds 1764532800.5\n"));
  const std::string labels = "{cgroup=\"build.slice/a\\nb\",rule=\"build.slice/**\"}";
  EXPECT_TRUE(has("reclaimd_cgroup_reclaimable_bytes" + labels + " 536870912\n")) << m;
  EXPECT_TRUE(has("reclaimd_cgroup_floor_bytes" + labels + " 134217728\n"));
  EXPECT_TRUE(has("reclaimd_cgroup_last_action_timestamp_seconds" + labels + " 1764532800.5\n"));
  EXPECT_TRUE(has("reclaimd_cgroup_reclaimed_bytes_total" + labels + " 99\n"));
  EXPECT_TRUE(has("process_cpu_seconds_total 1.5\n"));
  EXPECT_TRUE(has("process_resident_memory_bytes 4096\n"));
  EXPECT_TRUE(has("process_open_fds 12\n"));
  EXPECT_TRUE(has("process_max_fds 1024\n"));
  EXPECT_TRUE(has("process_start_time_seconds 1764530000\n"));
  Status stopped = sample();
  stopped.running = false;
  EXPECT_NE(formatMetrics(stopped).find("\nreclaimd_up 0\n"), std::string::npos);
  // Every sample line belongs to the metric declared with HELP and TYPE just before it.
  std::string declared;
  for (std::size_t pos = 0; pos < m.size();) {
    const std::size_t end = m.find('\n', pos);
    const std::string line = m.substr(pos, end - pos);
    pos = end + 1;
    if (line.rfind("# TYPE ", 0) == 0) declared = line.substr(7, line.find(' ', 7) - 7);
    if (line.empty() || line[0] == '#') continue;
    EXPECT_EQ(line.rfind(declared, 0), 0u) << line << " after TYPE " << declared;
  }
}

TEST(StatusText, WarmupDryRunAndCountdown) {
  const std::string t = formatStatus(sample());
  for (const char* key :
       {"version: 0.1.0 (abc123)", "machine: warmup (busy 43.2% so far, idle at or under 0.5%)",
        "reclaim starts in: 37s", "would reclaim: 64.0 MiB in 2 steps",
        "trimmed while busy: 48.0 MiB in 12 probes, 1 held by refaults", "last action: would reclaim 32.0 MiB",
        "target build.slice/a\\x0ab: rule build.slice/**", "reclaimable 512.0 MiB"}) {
    EXPECT_NE(t.find(key), std::string::npos) << key << "\n" << t;
  }
  EXPECT_EQ(t.find("a\nb"), std::string::npos) << "a newline in a cgroup name cannot forge a line";
}

TEST(StatusText, TheLastActionsTextCannotForgeLines) {
  Status s = sample();
  s.lastAction = "reclaimed 4MiB from evil\nmode: disabled";
  s.reason = "probe\rsaid";
  s.targets[0].lastAction = "step on x\ntarget forged: rule none";
  const std::string t = formatStatus(s);
  EXPECT_NE(t.find("last action: reclaimed 4MiB from evil\\x0amode: disabled"), std::string::npos) << t;
  EXPECT_NE(t.find("last: step on x\\x0atarget forged"), std::string::npos) << t;
  EXPECT_NE(t.find("reason: probe\\x0dsaid"), std::string::npos) << t;
  for (const char* forged : {"\nmode: disabled", "\ntarget forged", "\r"})
    EXPECT_EQ(t.find(forged), std::string::npos) << "forged by a name: " << forged << "\n" << t;
}

TEST(StatusJson, RoundTrip) {
  const Status s = sample();
  const std::string j = formatStatusJson(s);
  EXPECT_NE(j.find("\"busy_ratio\": 0.432"), std::string::npos) << j;
  auto back = parseStatusJson(j);
  ASSERT_TRUE(back.ok()) << back.error().message();
  EXPECT_EQ(formatStatus(*back), formatStatus(s));
  EXPECT_FALSE(parseStatusJson("not json").ok());
  EXPECT_FALSE(parseStatusJson("{\"steps\": \"many\"}").ok());
  Status bad = s;
  bad.targets[0].cgroup = "x\xFFy";
  EXPECT_TRUE(parseStatusJson(formatStatusJson(bad)).ok()) << "invalid UTF-8 is replaced, not thrown";
}

TEST(ProcessStats, Parsers) {
  auto self = parseSelfStat(
      "4242 (re claimd) x) S 1 4242 4242 0 -1 4194560 1000 0 0 0 150 50 0 0 20 0 1 0 12345 10000000 321 "
      "18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 17 0 0 0 0 0 0\n");
  ASSERT_TRUE(self.ok()) << self.error().message();
  EXPECT_EQ(self->utime, 150u);
  EXPECT_EQ(self->stime, 50u);
  EXPECT_EQ(self->starttime, 12345u);
  EXPECT_EQ(self->rssPages, 321u);
  EXPECT_FALSE(parseSelfStat("4242 (x) S 1 2\n").ok());
  auto limits = parseMaxOpenFiles(
      "Limit                     Soft Limit           Hard Limit           Units     \n"
      "Max open files            1024                 524288               files     \n");
  ASSERT_TRUE(limits.ok());
  EXPECT_EQ(*limits, 1024u);
  EXPECT_EQ(*parseMaxOpenFiles("Max open files            unlimited            unlimited            files\n"),
            UINT64_MAX);
  EXPECT_EQ(*parseBootTime("cpu  1 2 3 4\nbtime 1764500000\nprocesses 5\n"), 1764500000u);
  EXPECT_FALSE(parseBootTime("cpu  1 2 3 4\n").ok());
  // A line that is there but malformed is named, not reported as missing.
  auto badBoot = parseBootTime("btime soon\n");
  ASSERT_FALSE(badBoot.ok());
  EXPECT_EQ(badBoot.error().message(), "/proc/stat: malformed line \"btime soon\"");
  auto badLimit = parseMaxOpenFiles("Max open files            lots                 524288               files\n");
  ASSERT_FALSE(badLimit.ok());
  EXPECT_NE(badLimit.error().message().find("malformed line \"Max open files"), std::string::npos)
      << badLimit.error().message();
}

TEST(Cli, ArgumentOrder) {
  using V = std::vector<std::string>;
  EXPECT_EQ(normalizeArgs({"r"}), (V{"r", "run"}));
  EXPECT_EQ(normalizeArgs({"r", "--dry-run"}), (V{"r", "run", "--dry-run"}));
  EXPECT_EQ(normalizeArgs({"r", "--proc-root", "p", "probe"}), (V{"r", "probe", "--proc-root", "p"}));
  EXPECT_EQ(normalizeArgs({"r", "--config", "probe"}), (V{"r", "run", "--config", "probe"}));
  EXPECT_EQ(normalizeArgs({"r", "--dry-run", "status"}), (V{"r", "status", "--dry-run"}));
  EXPECT_EQ(normalizeArgs({"r", "--version"}), (V{"r", "--version"}));
}

// WATCHDOG_USEC=1 would wake the loop every millisecond: it is raised to the 1 s minimum.
TEST(Notify, ShortWatchdogIsClamped) {
  ::setenv("WATCHDOG_USEC", "1", 1);
  Notifier tiny;
  ::setenv("WATCHDOG_USEC", "30000000", 1);
  Notifier normal;
  ::unsetenv("WATCHDOG_USEC");
  ASSERT_TRUE(tiny.pingInterval().has_value());
  EXPECT_EQ(*tiny.pingInterval(), 500ms);
  EXPECT_EQ(*normal.pingInterval(), 15s);
}

}  // namespace
}  // namespace reclaimd::testing

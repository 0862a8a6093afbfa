// The busy cgroups as `reclaimd status` shows them: text, JSON and metrics, as ratios in JSON and
// metrics alike.
#include <gtest/gtest.h>

#include "controller/operate/Status.h"

namespace reclaimd::controller {
namespace {

Status busyMachine() {
  Status s;
  s.version = "0.1.0";
  s.requestedMode = s.effectiveMode = "gradual";
  s.idleState = "busy";
  s.windowBusyPercent = 2.6;
  s.busyThresholdPercent = 0.5;
  s.busyCgroups = {{"bg.slice", 2.125}, {"user.slice/user-1000.slice/a\nb.scope", 0.5}, {"/", 0.0625}};
  return s;
}

TEST(BusyStatus, TextNamesTheCgroupsWhileNotIdle) {
  const std::string t = formatStatus(busyMachine());
  EXPECT_NE(t.find("\nkept busy by: bg.slice 2.1%, user.slice/user-1000.slice/a\\x0ab.scope 0.5%, / 0.06% "
                   "(of all CPUs; idle at or under 0.5%)\n"),
            std::string::npos)
      << t;
  EXPECT_LT(t.find("machine: busy"), t.find("kept busy by:")) << "right under the machine's own share";
  Status idle = busyMachine();
  idle.idleState = "idle";
  EXPECT_EQ(formatStatus(idle).find("kept busy by"), std::string::npos);
  Status none = busyMachine();
  none.busyCgroups.clear();
  EXPECT_EQ(formatStatus(none).find("kept busy by"), std::string::npos) << "not known yet: no empty line";
}

TEST(BusyStatus, JsonCarriesThemAndReadsThemBack) {
  const Status s = busyMachine();
  const std::string j = formatStatusJson(s);
  EXPECT_NE(j.find("\"busy_cgroups\": [\n    {\n      \"busy_ratio\": 0.02125,\n      \"path\": \"bg.slice\"\n    },"),
            std::string::npos)
      << j;
  auto back = parseStatusJson(j);
  ASSERT_TRUE(back.ok()) << back.error().message();
  ASSERT_EQ(back->busyCgroups.size(), 3u);
  EXPECT_EQ(back->busyCgroups[1].path, "user.slice/user-1000.slice/a\nb.scope");
  EXPECT_DOUBLE_EQ(back->busyCgroups[2].busyPercent, 0.0625);
  EXPECT_EQ(formatStatus(*back), formatStatus(s));
  EXPECT_NE(formatStatusJson(Status{}).find("\"busy_cgroups\": []"), std::string::npos);
  EXPECT_TRUE(parseStatusJson("{\"idle_state\": \"busy\"}")->busyCgroups.empty()) << "an older daemon";
  EXPECT_FALSE(parseStatusJson("{\"busy_cgroups\": [{\"busy_ratio\": \"high\"}]}").ok());
}

TEST(BusyStatus, MetricsGaugeIsARatioPerCgroup) {
  const std::string m = formatMetrics(busyMachine());
  EXPECT_NE(m.find("# TYPE reclaimd_busy_cgroup_ratio gauge\n"), std::string::npos) << m;
  EXPECT_NE(m.find("\nreclaimd_busy_cgroup_ratio{cgroup=\"bg.slice\"} 0.02125\n"), std::string::npos) << m;
  EXPECT_NE(m.find("\nreclaimd_busy_cgroup_ratio{cgroup=\"user.slice/user-1000.slice/a\\nb.scope\"} 0.005\n"),
            std::string::npos);
  EXPECT_NE(m.find("\nreclaimd_busy_cgroup_ratio{cgroup=\"/\"} 0.000625\n"), std::string::npos);
  const std::string idle = formatMetrics(Status{});
  EXPECT_NE(idle.find("# TYPE reclaimd_busy_cgroup_ratio gauge\n"), std::string::npos);
  EXPECT_EQ(idle.find("reclaimd_busy_cgroup_ratio{"), std::string::npos) << "no series while none is known";
}

}  // namespace
}  // namespace reclaimd::controller

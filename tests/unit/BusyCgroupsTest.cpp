// Which cgroups keep the machine busy: the ranking over scans (pure).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <map>

#include "controller/engine/BusyCgroups.h"

namespace reclaimd::controller {
namespace {

using namespace std::chrono_literals;
using std::chrono::nanoseconds;

// A two-CPU machine: all-CPU time advances twice as fast as the wall clock.
constexpr int kCpus = 2;
const TimePoint kStart = TimePoint() + 1000s;

// A scan from {path: {inode, usage}}; the map's order puts parents before children.
CgroupCpuScan scanOf(const std::map<std::string, std::pair<std::uint64_t, nanoseconds>>& usage, bool complete = true) {
  CgroupCpuScan scan;
  scan.complete = complete;
  for (const auto& [path, u] : usage)
    scan.cgroups.push_back(CgroupCpu{path, u.first, u.second});
  return scan;
}

void addAt(BusyCgroups& busy, std::chrono::seconds at, CgroupCpuScan scan, nanoseconds own = 0s) {
  busy.add(kStart + at, nanoseconds(at) * kCpus, own, std::move(scan));
}

std::string text(const std::vector<BusyShare>& shares) {
  std::string out;
  for (const BusyShare& s : shares)
    out += fmt::format("{}{} {:.2f}", out.empty() ? "" : ", ", s.cgroup, s.percent);
  return out;
}

// Over 60 s on two CPUs (120 s of CPU time): a service at 2 %, a leaf slice at 1 %, a session
// scope at 0.5 %, the root's own (kernel threads, interrupts) at 0.1 %. Parents hold their
// children's usage and nothing of their own: they are not named, and the children are named once.
TEST(BusyCgroups, RanksOwnCpuSoParentsNeitherHideNorDuplicateChildren) {
  BusyCgroups busy(120s);
  addAt(busy, 0s,
        scanOf({{"", {1, 100s}},
                {"bg.slice", {2, 10s}},
                {"system.slice", {3, 50s}},
                {"system.slice/a.service", {4, 50s}},
                {"user.slice", {5, 20s}},
                {"user.slice/s.scope", {6, 20s}}}));
  addAt(busy, 60s,
        scanOf({{"", {1, 100s + 4320ms}},
                {"bg.slice", {2, 11200ms}},
                {"system.slice", {3, 52400ms}},
                {"system.slice/a.service", {4, 52400ms}},
                {"user.slice", {5, 20600ms}},
                {"user.slice/s.scope", {6, 20600ms}}}));
  EXPECT_EQ(text(busy.top(kBusyTop, kStart + 60s)),
            "system.slice/a.service 2.00, bg.slice 1.00, user.slice/s.scope 0.50");
  EXPECT_EQ(text(busy.top(10, kStart + 60s)),
            "system.slice/a.service 2.00, bg.slice 1.00, user.slice/s.scope 0.50, / 0.10")
      << "slices without processes of their own are not named";
}

// A cgroup with processes of its own and a child: each is named by what it used itself.
TEST(BusyCgroups, ParentWithOwnProcessesAndChild) {
  BusyCgroups busy(120s);
  addAt(busy, 0s, scanOf({{"", {1, 0s}}, {"work", {2, 0s}}, {"work/child", {3, 0s}}}));
  addAt(busy, 60s, scanOf({{"", {1, 3600ms}}, {"work", {2, 3600ms}}, {"work/child", {3, 1200ms}}}));
  EXPECT_EQ(text(busy.top(3, kStart + 60s)), "work 2.00, work/child 1.00");
}

// A cgroup removed and made again under the same name is new: all its usage is since the
// baseline, even when it exceeds the old cgroup's (a naive difference would say 2.4 s).
TEST(BusyCgroups, NewInodeUnderOldNameIsANewCgroup) {
  BusyCgroups busy(120s);
  addAt(busy, 0s, scanOf({{"", {1, 0s}}, {"x", {7, 1200ms}}}));
  addAt(busy, 60s, scanOf({{"", {1, 3600ms}}, {"x", {8, 3600ms}}}));
  EXPECT_EQ(text(busy.top(3, kStart + 60s)), "x 3.00");
}

// A counter that went backwards (same inode) restarted: counted from zero, not as a wrap.
TEST(BusyCgroups, CounterGoingBackwardsIsARestart) {
  BusyCgroups busy(120s);
  addAt(busy, 0s, scanOf({{"", {1, 0s}}, {"x", {7, 500s}}}));
  addAt(busy, 60s, scanOf({{"", {1, 1200ms}}, {"x", {7, 1200ms}}}));
  EXPECT_EQ(text(busy.top(3, kStart + 60s)), "x 1.00");
}

// A cgroup absent from a complete baseline is new: all its CPU is since.
TEST(BusyCgroups, CgroupMissingFromACompleteBaselineIsNew) {
  BusyCgroups busy(120s);
  addAt(busy, 0s, scanOf({{"", {1, 100s}}, {"p", {2, 100s}}}));
  addAt(busy, 60s, scanOf({{"", {1, 101200ms}}, {"p", {2, 101200ms}}, {"p/new", {3, 1200ms}}}));
  EXPECT_EQ(text(busy.top(3, kStart + 60s)), "p/new 1.00");
}

// Absent from an incomplete baseline (a capped walk), a cgroup may have been there unread: its
// lifetime is not the window's, so it is not named, and its CPU stays with its parent, which
// contains it (counted from zero, "p/old" would claim its 100 s lifetime: 83.5 %).
TEST(BusyCgroups, CgroupMissingFromAnIncompleteBaselineStaysWithItsParent) {
  BusyCgroups busy(120s);
  addAt(busy, 0s, scanOf({{"", {1, 100s}}, {"p", {2, 100s}}}, false));
  addAt(busy, 60s, scanOf({{"", {1, 101200ms}}, {"p", {2, 101200ms}}, {"p/old", {3, 100200ms}}}));
  EXPECT_EQ(text(busy.top(3, kStart + 60s)), "p 1.00");
}

// The span is the oldest scan within the window to the newest: a cgroup busy only before it is
// not named, and a share is over the whole window, not the last scan period.
TEST(BusyCgroups, ComparesOldestScanWithinTheWindowWithTheNewest) {
  BusyCgroups busy(120s);
  nanoseconds early = 0s, late = 0s;
  for (auto at = 0s; at <= 300s; at += 30s) {
    if (at <= 60s) early += 3s;
    if (at == 300s) late += 1200ms;
    addAt(busy, at, scanOf({{"", {1, early + late}}, {"early", {2, early}}, {"late", {3, late}}}));
  }
  EXPECT_EQ(text(busy.top(3, kStart + 300s)), "late 0.50") << "1.2 s over 120 s of two CPUs";
}

TEST(BusyCgroups, NeedsTwoRecentScans) {
  BusyCgroups busy(120s);
  EXPECT_TRUE(busy.due(kStart));
  addAt(busy, 0s, scanOf({{"", {1, 0s}}, {"x", {2, 0s}}}));
  EXPECT_TRUE(busy.top(3, kStart).empty()) << "one scan compares nothing";
  EXPECT_FALSE(busy.due(kStart + 29s));
  EXPECT_TRUE(busy.due(kStart + kBusyScanEvery));
  addAt(busy, 30s, scanOf({{"", {1, 600ms}}, {"x", {2, 600ms}}}));
  EXPECT_EQ(text(busy.top(3, kStart + 30s)), "x 1.00");
  EXPECT_EQ(text(busy.top(3, kStart + 150s)), "x 1.00");
  EXPECT_TRUE(busy.top(3, kStart + 151s).empty()) << "no scan for a whole window: the machine was idle";
  // A grace shorter than two scan periods still compares with the previous scan.
  busy.setWindow(10s);
  EXPECT_EQ(text(busy.top(3, kStart + 30s)), "x 1.00");
  busy.clear();
  EXPECT_TRUE(busy.top(3, kStart + 30s).empty());
}

// reclaimd's own CPU (the scans' included) is not held against the machine, as the idle
// detector does not: taken off its cgroup, which then ranks by what else runs there.
TEST(BusyCgroups, OwnCpuIsTakenOffOwnCgroup) {
  BusyCgroups busy(120s, "system.slice/reclaimd.service");
  addAt(busy, 0s, scanOf({{"", {1, 0s}}, {"system.slice/reclaimd.service", {2, 0s}}, {"x", {3, 0s}}}), 10s);
  addAt(busy, 60s, scanOf({{"", {1, 1800ms}}, {"system.slice/reclaimd.service", {2, 600ms}}, {"x", {3, 1200ms}}}),
        10600ms);
  EXPECT_EQ(text(busy.top(3, kStart + 60s)), "x 1.00");
}

TEST(BusyCgroups, TiesAreOrderedByPath) {
  BusyCgroups busy(120s);
  addAt(busy, 0s, scanOf({{"", {1, 0s}}, {"b", {2, 0s}}, {"a", {3, 0s}}, {"c", {4, 0s}}}));
  addAt(busy, 60s, scanOf({{"", {1, 3s}}, {"b", {2, 1s}}, {"a", {3, 1s}}, {"c", {4, 1s}}}));
  EXPECT_EQ(text(busy.top(2, kStart + 60s)), "a 0.83, b 0.83");
}

// Scans held stay bounded whatever the grace: older ones are thinned to a few baselines.
TEST(BusyCgroups, HeldScansAreBounded) {
  BusyCgroups busy(std::chrono::hours(1));
  for (auto at = 0s; at <= 7200s; at += 30s)
    addAt(busy, at, scanOf({{"", {1, nanoseconds(at) / 100}}}));
  EXPECT_LE(busy.held(), 10u);
  EXPECT_EQ(text(busy.top(3, kStart + 7200s)), "/ 0.50");
}

}  // namespace
}  // namespace reclaimd::controller

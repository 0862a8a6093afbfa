// Which cgroups keep the machine busy: the ranking over scans (pure), and the scan itself on
// fixture trees.
#include <fcntl.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <map>

#include "base/UniqueFd.h"
#include "controller/engine/BusyCgroups.h"
#include "controller/shell/BusyScan.h"
#include "tests/unit/Fixture.h"

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

std::string text(const std::vector<BusyCgroup>& shares) {
  std::string out;
  for (const BusyCgroup& s : shares)
    out += fmt::format("{}{} {:.2f}", out.empty() ? "" : ", ", s.path, s.busyPercent);
  return out;
}

// Units quiet for a whole window (idle.units): the subtree's use between the newest scan and one
// at least the window before it, as a share of ONE CPU; unknown history is not quiet.
TEST(BusyCgroups, QuietNamesWhatUsedAtMostTheThresholdOverAWholeWindow) {
  BusyCgroups busy(120s);
  auto all = [](std::string_view) { return true; };
  const auto at = [](nanoseconds a, nanoseconds b, nanoseconds c, std::uint64_t remadeInode) {
    return scanOf({{"build.scope", {2, a}}, {"editor.service", {3, b}}, {"remade.scope", {remadeInode, c}}});
  };
  addAt(busy, 0s, at(5s, 1s, 0s, 4));
  addAt(busy, 30s, at(5100ms, 1200ms, 0s, 4));
  EXPECT_TRUE(busy.quiet(0.5, all).empty()) << "no scan a window back yet";
  addAt(busy, 60s, at(5200ms, 1400ms, 0s, 4));
  addAt(busy, 90s, at(5300ms, 1600ms, 0s, 4));
  addAt(busy, 120s, at(5400ms, 1800ms, 0s, 5));  // build: 0.33 % of one CPU; remade: a new inode
  auto quiet = busy.quiet(0.5, all);
  ASSERT_EQ(quiet.size(), 1u);
  EXPECT_EQ(quiet[0].path, "build.scope");
  EXPECT_NEAR(quiet[0].percent, 100.0 * 0.4 / 120, 1e-9);
  EXPECT_EQ(quiet[0].usage, 5400ms);
  EXPECT_EQ(quiet[0].at, kStart + 120s);
  EXPECT_TRUE(busy.quiet(0.3, all).empty()) << "0.33 % is over a 0.3 % threshold";
  EXPECT_TRUE(busy.quiet(0.5, [](std::string_view p) { return p != "build.scope"; }).empty());
  // The baseline is the newest scan a whole window back: at 150 s the one at 30 s.
  addAt(busy, 150s, at(5400ms, 2000ms, 0s, 5));
  quiet = busy.quiet(0.5, all);
  ASSERT_EQ(quiet.size(), 1u);
  EXPECT_NEAR(quiet[0].percent, 100.0 * 0.3 / 120, 1e-9);
  // A counter that went backwards (a restart) is not history to judge by.
  addAt(busy, 180s, at(1s, 2200ms, 0s, 5));
  EXPECT_TRUE(busy.quiet(0.5, all).empty());
}

// The grace is sustained quiet: work in one scan period (1.67 % of a CPU for 30 s) keeps a
// cgroup from being quiet, although its average over the window (0.42 %) is under the
// threshold.
TEST(BusyCgroups, WorkInOneScanPeriodIsNotQuietWhateverTheAverage) {
  BusyCgroups busy(120s);
  auto all = [](std::string_view) { return true; };
  for (int i = 0; i <= 3; ++i) addAt(busy, i * 30s, scanOf({{"build.scope", {2, 5s}}}));
  addAt(busy, 120s, scanOf({{"build.scope", {2, 5500ms}}}));
  EXPECT_TRUE(busy.quiet(0.5, all).empty());
  for (int i = 5; i <= 8; ++i) addAt(busy, i * 30s, scanOf({{"build.scope", {2, 5500ms}}}));
  EXPECT_EQ(busy.quiet(0.5, all).size(), 1u) << "quiet a whole window after the work";
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
  // Scans follow the window: four in a grace (a 10 s grace is scanned every 2.5 s).
  busy.setWindow(10s);
  EXPECT_FALSE(busy.due(kStart + 32s));
  EXPECT_TRUE(busy.due(kStart + 32500ms));
  busy.setWindow(1s);
  EXPECT_FALSE(busy.due(kStart + 30s + 999ms)) << "never more often than every second";
  EXPECT_TRUE(busy.due(kStart + 31s));
  busy.clear();
  EXPECT_TRUE(busy.top(3, kStart + 30s).empty());
  EXPECT_TRUE(busy.due(kStart + 31s));
}

// A scan that could not be taken is tried again a scan period later, not every tick.
TEST(BusyCgroups, FailedScanWaitsAPeriodToo) {
  BusyCgroups busy(120s);
  busy.failed(kStart);
  EXPECT_FALSE(busy.due(kStart + 1s));
  EXPECT_TRUE(busy.due(kStart + kBusyScanEvery));
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
  EXPECT_LE(busy.held(), 6u);
  EXPECT_EQ(text(busy.top(3, kStart + 7200s)), "/ 0.50");
}

// A cgroup-shaped fixture directory with a cpu.stat.
void cg(testing::Fixture& fx, const std::string& path, const std::string& usageUsec) {
  fx.write(path + "/cpu.stat", "usage_usec " + usageUsec + "\nuser_usec 0\nsystem_usec 0\n");
}

std::uint64_t inodeOf(const testing::Fixture& fx, const std::string& path) {
  struct stat st {};
  EXPECT_EQ(::stat(fx.path(path).c_str(), &st), 0) << path;
  return st.st_ino;
}

UniqueFd openRoot(const testing::Fixture& fx) {
  return UniqueFd(::open(fx.path("cg").c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
}

TEST(BusyScan, ReadsEveryCgroupInPreOrder) {
  testing::Fixture fx;
  cg(fx, "cg", "9000000");
  cg(fx, "cg/system.slice", "5000000");
  cg(fx, "cg/system.slice/cron.service", "4000000");
  cg(fx, "cg/user.slice", "1");
  auto root = openRoot(fx);
  for (ScanOpens opens : {ScanOpens::Beneath, ScanOpens::ByDirectory}) {
    auto scan = scanCgroupCpu(root.get(), kBusyScanMaxCgroups, opens);
    ASSERT_TRUE(scan.ok()) << scan.error().message();
    EXPECT_TRUE(scan->complete);
    std::map<std::string, std::pair<std::uint64_t, nanoseconds>> got;
    for (const CgroupCpu& c : scan->cgroups)
      got[c.path] = {c.inode, c.usage};
    ASSERT_EQ(got.size(), 4u);
    EXPECT_EQ(got[""], std::make_pair(inodeOf(fx, "cg"), nanoseconds(9s)));
    EXPECT_EQ(got["system.slice/cron.service"],
              std::make_pair(inodeOf(fx, "cg/system.slice/cron.service"), nanoseconds(4s)));
    EXPECT_EQ(got["user.slice"].second, 1us);
    EXPECT_EQ(scan->cgroups[0].path, "");
  }
}

// A cpu.stat that cannot be read or parsed is skipped and the scan is incomplete; symlinks are
// never followed; a walk stopped at the cap reads no more than the cap and is incomplete.
TEST(BusyScan, SkipsWhatItCannotReadAndSaysSo) {
  testing::Fixture fx;
  cg(fx, "cg", "10");
  cg(fx, "cg/a", "5");
  fx.write("cg/bad/cpu.stat", "usage_usec lots\n");
  // Well-formed, but no cpu.stat is 5 KiB; the first 4,096 bytes end at a line's end.
  std::string huge = "usage_usec 100\n";
  for (int i = 0; i < 700; ++i)
    huge += "abcd 1\n";
  fx.write("cg/huge/cpu.stat", huge);
  cg(fx, "outside", "7");
  std::filesystem::create_directory_symlink(fx.path("outside"), fx.path("cg/escape"));
  auto root = openRoot(fx);
  for (ScanOpens opens : {ScanOpens::Beneath, ScanOpens::ByDirectory}) {
    auto scan = scanCgroupCpu(root.get(), kBusyScanMaxCgroups, opens);
    ASSERT_TRUE(scan.ok());
    EXPECT_FALSE(scan->complete);
    ASSERT_EQ(scan->cgroups.size(), 2u);
    EXPECT_EQ(scan->cgroups[0].path, "");
    EXPECT_EQ(scan->cgroups[1].path, "a");
  }
  fx.remove("cg/bad");
  fx.remove("cg/huge");
  for (ScanOpens opens : {ScanOpens::Beneath, ScanOpens::ByDirectory}) {
    auto whole = scanCgroupCpu(root.get(), kBusyScanMaxCgroups, opens);
    ASSERT_TRUE(whole.ok());
    EXPECT_TRUE(whole->complete) << "a symlink is not a cgroup left unread";
    EXPECT_EQ(whole->cgroups.size(), 2u);
    auto capped = scanCgroupCpu(root.get(), 1, opens);
    ASSERT_TRUE(capped.ok());
    EXPECT_FALSE(capped->complete);
    EXPECT_EQ(capped->cgroups.size(), 1u);
  }
}

TEST(BusyScan, UnreadableRootIsAnError) {
  EXPECT_FALSE(scanCgroupCpu(-1).ok());
}

}  // namespace
}  // namespace reclaimd::controller

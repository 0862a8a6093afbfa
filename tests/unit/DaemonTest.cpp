// End to end on fixture trees: the real binary over the simulated machine written as files
// (SimFiles.h), regular files standing in for memory.reclaim, drop_caches and compact_memory.
// What a fixture cannot show (EINVAL from 6.1, EAGAIN, real cache falling) the VM tests show.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <thread>
#include <tuple>

#include "tests/unit/DaemonHarness.h"
#include "tests/unit/SimFiles.h"
#include "tests/unit/Fixture.h"
#include "tests/unit/Process.h"

namespace reclaimd::testing {
namespace {

using namespace std::chrono_literals;

constexpr const char* kFastPolicy = "idle:\n  grace: 1s\n  interval: 1s\n  sample_period: 100ms\n";

class DaemonTest : public DaemonHarness {
 protected:
  void SetUp() override { fx_.write("policy.yaml", std::string("mode: gradual\n") + kFastPolicy); }
  // Sends SIGHUP for the policy.yaml the test wrote: the reload must be rejected saying `why`,
  // the daemon keep its policy and go on running.
  void expectReloadRejected(Process& d, const std::string& why) {
    d.signal(SIGHUP);
    ASSERT_TRUE(waitLog("event=reload result=rejected keeping=previous")) << log().substr(0, 2000);
    EXPECT_TRUE(logHas(why)) << log().substr(0, 2000);
    EXPECT_TRUE(d.running());
  }
};

TEST_F(DaemonTest, GradualReclaimsInChunksAfterGraceAndCompacts) {
  SimFiles machine(fx_);
  auto d = start();
  ASSERT_TRUE(waitLog("event=reclaim_step")) << log();
  // 550 MiB reclaimable, 128 MiB floor, 256 MiB step on a 2 GiB machine: four 64 MiB chunks.
  EXPECT_TRUE(logHas("event=mode requested=gradual effective=gradual format=swappiness=0")) << log();
  EXPECT_TRUE(logHas("event=idle_entered")) << log();
  EXPECT_TRUE(logHas("asked_mib=256.0 requested_mib=256.0")) << log();
  EXPECT_TRUE(logHas("chunks=4")) << log();
  EXPECT_EQ(fx_.read("cg/memory.reclaim"), "67108864 swappiness=0");
  ASSERT_TRUE(eventually([&] { return fx_.read("proc/sys/vm/compact_memory") == "1"; }, 5s));
  EXPECT_EQ(fx_.read("proc/sys/vm/drop_caches"), "") << "gradual never drops caches";
  d->signal(SIGTERM);
  EXPECT_EQ(d->wait(5s), 0) << log();
  EXPECT_TRUE(logHas("event=stop signal=SIGTERM"));
}

TEST_F(DaemonTest, DryRunWritesNothing) {
  SimFiles machine(fx_);
  auto d = start({"--dry-run"});
  ASSERT_TRUE(waitLog("event=reclaim_step cgroup=/ rule=machine kind=idle dry_run=true")) << log();
  ASSERT_TRUE(waitLog("event=compact dry_run=true")) << log();
  EXPECT_EQ(fx_.read("cg/memory.reclaim"), "0 swappiness=0");
  EXPECT_EQ(fx_.read("proc/sys/vm/compact_memory"), "");
  EXPECT_EQ(fx_.read("proc/sys/vm/drop_caches"), "");
  d->signal(SIGTERM);
  EXPECT_EQ(d->wait(5s), 0);
}

TEST_F(DaemonTest, SighupKeepsTheOldPolicyWhenTheNewOneIsInvalid) {
  SimFiles machine(fx_);
  auto d = start();
  ASSERT_TRUE(waitLog("event=start"));
  fx_.write("policy.yaml", "mode: sometimes\n");
  expectReloadRejected(*d, "policy.yaml:1:7: mode");
  fx_.write("policy.yaml", std::string("mode: disabled\n") + kFastPolicy);
  d->signal(SIGHUP);
  ASSERT_TRUE(waitLog("event=reload result=applied mode=disabled")) << log();
  d->signal(SIGTERM);
  EXPECT_EQ(d->wait(5s), 0);
}

// 20,001 YAML aliases of one rule, sent by SIGHUP: expanded, they would exhaust memory
// (std::bad_alloc, rc 134); the reload must refuse them and the daemon go on.
TEST_F(DaemonTest, SighupWithTwentyThousandAliasesOfOneRuleIsRejectedNotAnAbort) {
  SimFiles machine(fx_);
  auto d = start();
  ASSERT_TRUE(waitLog("event=start"));
  std::string text = std::string(kFastPolicy) + "rules:\n  - &r {match: a}\n";
  for (int i = 0; i < 20000; ++i)
    text += "  - *r\n";
  fx_.write("policy.yaml", text);
  expectReloadRejected(*d, "20001 rules so far, more than the 1000 allowed");
  d->signal(SIGTERM);
  EXPECT_EQ(d->wait(5s), 0);
}

// SIGUSR1, SIGUSR2 and SIGALRM at their default would kill it without a stop event, leaving the
// socket behind.
TEST_F(DaemonTest, SignalsItDoesNotUseAreLoggedAndIgnored) {
  SimFiles machine(fx_);
  auto d = start();
  ASSERT_TRUE(waitLog("event=start"));
  for (int sig : {SIGUSR1, SIGUSR2, SIGALRM}) {
    d->signal(sig);
    const std::string line = std::string("event=signal_ignored signal=") + sigabbrev_np(sig);
    ASSERT_TRUE(waitLog(line)) << log();
  }
  EXPECT_TRUE(d->running());
  d->signal(SIGTERM);
  EXPECT_EQ(d->wait(5s), 0);
  EXPECT_TRUE(logHas("event=stop signal=SIGTERM")) << log();
}

// With the soft fd limit left at 1,024 and four fds a target, about 1,000 targets (a busy
// Kubernetes node) would run out of fds: reclaim disabled, tens of thousands of warnings.
TEST_F(DaemonTest, ATwelveHundredTargetTreeUnderASoftLimitOf1024IsWalkedAndReadWhole) {
  SimFiles machine(fx_);
  constexpr int kPods = 1200;
  machine.change([&](SimMachine& m) {
    for (int i = 0; i < kPods; ++i)
      m.addCgroup("pods/p" + std::to_string(i), 64 * kMiB);
  });
  rlimit saved{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &saved), 0);
  ASSERT_GT(saved.rlim_max, 4 * static_cast<rlim_t>(kPods))
      << "the hard limit must leave room for the test to mean anything";
  rlimit low = saved;
  low.rlim_cur = 1024;  // what systemd and most shells give a service: the child inherits it
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &low), 0);
  auto d = startWith(std::string("mode: gradual\n") + kFastPolicy +
                     "rules:\n  - match: pods/*\n    idle_source: cgroup\n    floor: 16M\n");
  ::setrlimit(RLIMIT_NOFILE, &saved);
  ASSERT_TRUE(waitLog("event=fd_limit soft=" + std::to_string(saved.rlim_max))) << log().substr(0, 2000);
  ASSERT_TRUE(waitLog("targets=" + std::to_string(kPods), 0, 20s)) << log().substr(0, 2000);
  ASSERT_TRUE(waitLog("event=reclaim_step cgroup=pods/", 0, 20s)) << log().substr(0, 2000);
  EXPECT_FALSE(logHas("Too many open files")) << log().substr(0, 2000);
  EXPECT_FALSE(logHas("walk_incomplete")) << log().substr(0, 2000);
  d->signal(SIGTERM);
  const auto code = d->wait(10s);
  const std::string tail = log().substr(log().size() > 4000 ? log().size() - 4000 : 0);
  EXPECT_EQ(code, 0) << "what it did last:\n" << tail;
}

// The daemon's open fds whose target lies under `dir` (removed directories too: "... (deleted)").
std::size_t fdsUnder(pid_t pid, const std::string& dir) {
  std::size_t n = 0;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/fd", ec)) {
    const auto target = std::filesystem::read_symlink(e.path(), ec);
    if (!ec && target.string().rfind(dir, 0) == 0) ++n;
  }
  return n;
}

// Whether `file` was read since it was last written.
bool readSince(const std::string& file) {
  struct stat st {};
  if (::stat(file.c_str(), &st) != 0) return false;
  return std::tie(st.st_atim.tv_sec, st.st_atim.tv_nsec) > std::tie(st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
}

// Quiet cgroups of a busy machine are read at every scan as candidate units; one that never
// becomes a target must not stay open after the scan: removed, it would stay pinned by the
// daemon's fds (a dying cgroup), and cgroups that come and go would use up the fd limit.
TEST_F(DaemonTest, QuietCgroupsReadAsCandidatesAreNotKeptOpen) {
  SimFiles machine(fx_);
  constexpr int kQuiet = 20;
  machine.change([&](SimMachine& m) {
    m.addCgroup("work", 64 * kMiB);
    m.cgroup("work").cpuShare = 0.5;
    m.setMachineBusy(0.5);
    m.chargeMachineTo("work");
    for (int i = 0; i < kQuiet; ++i)
      m.addCgroup("q" + std::to_string(i), 4 * kMiB);  // under what makes a unit: never a target
  });
  auto d = start();
  ASSERT_TRUE(waitLog("event=start")) << log();
  const std::string quiet = fx_.path("cg/q");
  // A scan judged them quiet and their memory.stat was read: a read moves a file's access time
  // past its modification (relatime, as for a file never read before).
  ASSERT_TRUE(eventually([&] { return readSince(fx_.path("cg/q0/memory.stat")); }, 10s)) << log().substr(0, 3000);
  machine.change([&](SimMachine& m) {
    for (int i = 0; i < kQuiet; ++i)
      m.removeCgroup("q" + std::to_string(i));
  });
  EXPECT_TRUE(eventually([&] { return fdsUnder(d->pid(), quiet) == 0; }, 10s))
      << fdsUnder(d->pid(), quiet) << " fds still open in removed cgroups";
  EXPECT_TRUE(d->running());
  d->signal(SIGTERM);
  EXPECT_EQ(d->wait(5s), 0) << log().substr(0, 3000);
}

TEST_F(DaemonTest, InvalidConfigAtStartIsAConfigError) {
  fx_.write("policy.yaml", "idle:\n  grace: never\n");
  SimFiles machine(fx_);
  auto d = start();
  EXPECT_EQ(d->wait(5s), 78);
  EXPECT_TRUE(logHas("policy.yaml:2:10: idle.grace")) << log();
}

TEST_F(DaemonTest, SighupWithYamlThatMakesTheReaderLoopKeepsTheDaemonAnswering) {
  SimFiles machine(fx_);
  auto d = start();
  ASSERT_TRUE(waitLog("event=start"));
  fx_.write("policy.yaml", kRunawayYaml);
  // Unbounded, the loop would hang in yaml-cpp, SIGTERM unanswered.
  expectReloadRejected(*d, "policy.yaml: the YAML reader ");
  d->signal(SIGTERM);
  EXPECT_EQ(d->wait(10s), 0) << log();
  EXPECT_TRUE(logHas("event=stop signal=SIGTERM")) << log();
}

TEST_F(DaemonTest, StopDuringAReloadsPolicyCheckEndsTheCheck) {
  SimFiles machine(fx_);
  auto d = start();
  ASSERT_TRUE(waitLog("event=start"));
  fx_.write("policy.yaml", kRunawayYaml);
  // The SIGTERM arrives with the SIGHUP or while the check runs (the child needs 2 s of CPU to
  // be stopped by its own limit): the check gives way, the reload is rejected, the daemon stops.
  d->signal(SIGHUP);
  d->signal(SIGTERM);
  EXPECT_EQ(d->wait(10s), 0) << log();
  EXPECT_TRUE(logHas("event=reload result=rejected keeping=previous")) << log();
  EXPECT_TRUE(logHas("(stopping)")) << log();
  EXPECT_TRUE(logHas("event=stop signal=SIGTERM")) << log();
}

// Whether `parent` has a child running the bounded policy check (`reclaimd __parse-policy`).
bool parseCheckRuns(pid_t parent) {
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    std::ifstream stat(entry.path() / "stat");
    std::string line;
    if (!std::getline(stat, line) || line.rfind(')') == std::string::npos) continue;
    std::istringstream fields(line.substr(line.rfind(')') + 2));
    char state = 0;
    pid_t ppid = 0;
    fields >> state >> ppid;
    std::ifstream cmdline(entry.path() / "cmdline");
    const std::string args((std::istreambuf_iterator<char>(cmdline)), std::istreambuf_iterator<char>());
    if (ppid == parent && args.find("__parse-policy") != std::string::npos) return true;
  }
  return false;
}

TEST_F(DaemonTest, StatusIsAnsweredWhileAReloadsPolicyIsRead) {
  SimFiles machine(fx_);
  auto d = start();
  ASSERT_TRUE(waitLog("event=start"));
  // The reader loops on this text until its 2 s of CPU run out: the check runs that long.
  fx_.write("policy.yaml", kRunawayYaml);
  d->signal(SIGHUP);
  ASSERT_TRUE(eventually([&] { return parseCheckRuns(d->pid()); }, 10s)) << log();
  // Answered by the loop while the check runs, before the reload's outcome.
  auto [code, out] = runCommand({RECLAIMD_BINARY, "status", "--socket", fx_.path("run/status.sock")});
  const bool decided = logHas("event=reload result=");
  EXPECT_EQ(code, 0) << out;
  EXPECT_FALSE(decided) << log();
  ASSERT_TRUE(waitLog("event=reload result=rejected keeping=previous")) << log();
  EXPECT_TRUE(d->running());
}

TEST_F(DaemonTest, YamlThatMakesTheReaderLoopAtStartIsAConfigError) {
  fx_.write("policy.yaml", kRunawayYaml);
  SimFiles machine(fx_);
  auto d = start();
  EXPECT_EQ(d->wait(10s), 78) << log();
  EXPECT_TRUE(logHas("event=config_invalid")) << log();
  EXPECT_TRUE(logHas("policy.yaml: the YAML reader ")) << log();
  EXPECT_TRUE(log().ends_with("event=exit code=78\n")) << log();
}

TEST_F(DaemonTest, AStatusSocketPathTakenEndsTheRunWithItsExitCode) {
  SimFiles machine(fx_);
  fx_.write("run/status.sock", "not a socket\n");
  auto d = start();
  EXPECT_EQ(d->wait(10s), 73) << log();
  EXPECT_TRUE(logHas("event=status_socket_taken")) << log();
  EXPECT_TRUE(log().ends_with("event=exit code=73\n")) << log();
}

// A tmpfiles cleaner empties the socket's directory under the running daemon: within a check
// period (10 s) the socket is back, and `reclaimd status` answers again.
TEST_F(DaemonTest, AStatusSocketRemovedWhileRunningIsBoundAgain) {
  SimFiles machine(fx_);
  auto d = start();
  ASSERT_TRUE(waitLog("event=start"));
  std::filesystem::remove_all(fx_.path("run"));
  ASSERT_TRUE(waitLog("event=status_socket_restored", 0, 20s)) << log();
  auto [code, out] = runCommand({RECLAIMD_BINARY, "status", "--socket", fx_.path("run/status.sock")});
  EXPECT_EQ(code, 0) << out;
  d->signal(SIGTERM);
  EXPECT_EQ(d->wait(5s), 0) << log();
  EXPECT_FALSE(std::filesystem::exists(fx_.path("run/status.sock"))) << "the new socket is removed at the stop";
}

TEST_F(DaemonTest, NothingPossibleExitsUnavailable) {
  SimFiles machine(fx_);
  fx_.remove("cg/memory.reclaim");
  fx_.remove("proc/sys/vm/drop_caches");
  auto d = start();
  EXPECT_EQ(d->wait(5s), 69);
  EXPECT_TRUE(logHas("nothing can be reclaimed")) << log();
}

TEST_F(DaemonTest, MissingProcStatIsASetupFailure) {
  // No SimFiles: the proc tree is empty (the cgroup root exists: a missing one is an
  // earlier, different error, exit 66).
  fx_.write("cg/cgroup.controllers", "memory\n");
  auto d = start();
  EXPECT_EQ(d->wait(5s), 1);
  EXPECT_TRUE(logHas("event=setup_failed")) << log();
}

}  // namespace
}  // namespace reclaimd::testing

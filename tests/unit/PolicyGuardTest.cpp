// The YAML reader under a bound, in a fresh process (policies/Guard.h): the child is the real
// reclaimd binary's hidden subcommand, driven from here as the daemon and check-config drive it.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "policies/Guard.h"
#include "tests/unit/Fixture.h"

namespace reclaimd::policies {
namespace {

using namespace std::chrono_literals;

// fuzz_policy's find: yaml-cpp 0.7 loops forever on these 8 bytes, allocating.
constexpr const char* kRunaway = ",a-\n  b\n";

ParseGuard reclaimd() {
  ParseGuard g;
  g.program = RECLAIMD_BINARY;  // this test binary has no __parse-policy subcommand
  return g;
}

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(PolicyTexts, EncodeDecodeRoundTrip) {
  const std::vector<PolicyText> files = {
      {"/etc/reclaimd/policy.yaml", "mode: gradual\n"}, {"odd name\n3 4\n", ""}, {"", std::string("a\0b\n", 4)}};
  auto back = decodePolicyTexts(encodePolicyTexts(files));
  ASSERT_TRUE(back) << back.error().message();
  ASSERT_EQ(back->size(), files.size());
  for (std::size_t i = 0; i < files.size(); ++i) {
    EXPECT_EQ((*back)[i].source, files[i].source);
    EXPECT_EQ((*back)[i].text, files[i].text);
  }
  EXPECT_TRUE(decodePolicyTexts("")->empty());
}

TEST(PolicyTexts, MalformedInputIsAnError) {
  for (const char* bad : {"1 2\nab", "3\nabc", "x 1\nab", "1 -1\nab", "1 2 3\nabc", "99999999999999999999 1\na",
                          "1 18446744073709551615\nab", "\n"}) {
    EXPECT_FALSE(decodePolicyTexts(bad).ok()) << bad;
  }
}

TEST(PolicyGuard, ParseReportsEachFileThenTheMerge) {
  // The child's stage marks: file i before its YAML is read, then files.size() (the merge), even
  // when a file is not YAML, so the parent names the file being read when it stops the child.
  for (const char* second : {"mode: disabled\n", "[unclosed\n"}) {
    std::vector<std::size_t> seen;
    (void)parsePolicyFiles({{"a", "mode: gradual\n"}, {"b", second}, {"c", ""}},
                           [&](std::size_t file) { seen.push_back(file); });
    EXPECT_EQ(seen, (std::vector<std::size_t>{0, 1, 2, 3})) << second;
  }
}

TEST(PolicyGuard, HowTheChildEndedIsJudged) {
  EXPECT_TRUE(judgeParseEnd(W_EXITCODE(0, 0), "p.yaml"));
  auto cpu = judgeParseEnd(W_EXITCODE(0, SIGXCPU), "p.yaml");
  ASSERT_FALSE(cpu);
  EXPECT_TRUE(has(cpu.error().message(), "p.yaml: the YAML reader did not finish within 2 s of CPU"))
      << cpu.error().message();
  EXPECT_EQ(cpu.error().errnoValue(), 0) << "the file's fault: Errc::Invalid";
  auto hardLimit = judgeParseEnd(W_EXITCODE(0, SIGKILL), "p.yaml");
  EXPECT_TRUE(!hardLimit && has(hardLimit.error().message(), "did not finish within 2 s of CPU"));
  auto memory = judgeParseEnd(W_EXITCODE(kParseChildOutOfMemory, 0), "p.yaml");
  ASSERT_FALSE(memory);
  EXPECT_TRUE(has(memory.error().message(), "p.yaml: the YAML reader needed more than 1GiB of memory"))
      << memory.error().message();
  auto crash = judgeParseEnd(W_EXITCODE(0, SIGSEGV), "p.yaml");
  ASSERT_FALSE(crash);
  EXPECT_TRUE(has(crash.error().message(), "p.yaml: the YAML reader crashed (SEGV)")) << crash.error().message();
  EXPECT_EQ(crash.error().errnoValue(), 0);
  auto usage = judgeParseEnd(W_EXITCODE(64, 0), "p.yaml");
  ASSERT_FALSE(usage);
  EXPECT_EQ(usage.error().errnoValue(), EPROTO) << "not the file's fault: the check could not be done";
}

TEST(PolicyGuard, FinishedParsesPassValidOrNot) {
  EXPECT_TRUE(checkParseFinishes({{"p.yaml", "reclaim: {floor: 64M}\n"}}, reclaimd()));
  EXPECT_TRUE(checkParseFinishes({{"p.yaml", "reclaim: {floor: lots}\n"}}, reclaimd()));
  EXPECT_TRUE(checkParseFinishes({{"p.yaml", "[unclosed\n"}}, reclaimd()));
  EXPECT_TRUE(checkParseFinishes({{"p.yaml", ""}, {"p.d/1.yaml", "mode: disabled\n"}}, reclaimd()));
}

TEST(PolicyGuard, TheDropInThatLoopsIsNamed) {
  auto r = checkParseFinishes({{"/etc/p.yaml", "mode: gradual\n"},
                               {"/etc/p.d/10-ok.yaml", "idle: {grace: 1m}\n"},
                               {"/etc/p.d/20-bad.yaml", kRunaway},
                               {"/etc/p.d/30-ok.yaml", "mode: disabled\n"}},
                              reclaimd());
  ASSERT_FALSE(r);
  EXPECT_TRUE(testing::refusedAsRunaway(r.error().message(), "/etc/p.d/20-bad.yaml")) << r.error().message();
  EXPECT_EQ(r.error().errnoValue(), 0) << "the file's fault: Errc::Invalid";
}

TEST(PolicyGuard, WallClockLimitStopsTheChild) {
  ParseGuard g = reclaimd();
  g.wall = 100ms;  // the runaway input needs 2 s of CPU to be stopped by its own limit
  auto r = checkParseFinishes({{"p.yaml", kRunaway}}, g);
  ASSERT_FALSE(r);
  EXPECT_TRUE(has(r.error().message(), "p.yaml: the YAML reader did not finish within 100ms")) << r.error().message();
}

TEST(PolicyGuard, ReadableCancelFdEndsTheCheck) {
  int ends[2];
  ASSERT_EQ(::pipe(ends), 0);
  ASSERT_EQ(::write(ends[1], "x", 1), 1);
  ParseGuard g = reclaimd();
  g.cancelFd = ends[0];
  auto r = checkParseFinishes({{"p.yaml", kRunaway}}, g);
  ::close(ends[0]);
  ::close(ends[1]);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().errnoValue(), ECANCELED) << r.error().message();
}

TEST(PolicyGuard, ACheckThatCannotRunIsNotTheFilesFault) {
  ParseGuard missing;
  missing.program = "/nonexistent/reclaimd";
  auto r = checkParseFinishes({{"p.yaml", "mode: gradual\n"}}, missing);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().errnoValue(), ENOENT) << r.error().message();
  // A program that exits 0 without parsing must not vouch for the text.
  ParseGuard other;
  other.program = "/bin/true";
  auto t = checkParseFinishes({{"p.yaml", kRunaway}}, other);
  ASSERT_FALSE(t);
  EXPECT_EQ(t.error().errnoValue(), EPROTO) << t.error().message();
}

TEST(PolicyGuard, OversizedTextIsLeftToTheSizeCheck) {
  // parsePolicyFiles refuses more than kMaxPolicyBytes before reading YAML: no child is needed
  // (none could be started here), and the refusal names the size.
  ParseGuard missing;
  missing.program = "/nonexistent/reclaimd";
  const std::vector<PolicyText> files = {{"p.yaml", std::string(kMaxPolicyBytes + 1, '#')}};
  EXPECT_TRUE(checkParseFinishes(files, missing));
  auto p = parsePolicyFiles(files);
  ASSERT_FALSE(p);
  EXPECT_TRUE(has(p.error().message(), "more than the 1MiB allowed")) << p.error().message();
}

TEST(PolicyGuard, LoadReadsChecksAndParses) {
  testing::Fixture fx;
  fx.write("policy.yaml", "reclaim:\n  floor: 64M\n");
  fx.write("policy.d/10-x.yaml", "mode: disabled\n");
  auto p = loadPolicyFileGuarded(fx.path("policy.yaml"), reclaimd());
  ASSERT_TRUE(p) << p.error().message();
  EXPECT_EQ(p->reclaim.floor, 64ULL << 20);
  EXPECT_EQ(p->mode, Mode::Disabled);
  fx.write("policy.d/20-bad.yaml", kRunaway);
  auto bad = loadPolicyFileGuarded(fx.path("policy.yaml"), reclaimd());
  ASSERT_FALSE(bad);
  EXPECT_TRUE(has(bad.error().message(), fx.path("policy.d/20-bad.yaml") + ": the YAML reader "))
      << bad.error().message();
}

}  // namespace
}  // namespace reclaimd::policies

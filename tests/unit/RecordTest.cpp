// `reclaimd record` and `replay`: a run over the simulated machine, recorded, replays to the
// same commands, every time; a recording that differs from what the engine does, is cut at its
// bound, or is not a recording at all, is said so.
#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <sstream>

#include "controller/ExitCodes.h"
#include "controller/record/RecordFormat.h"
#include "controller/record/Recorder.h"
#include "controller/record/Replay.h"
#include "tests/unit/EngineHarness.h"
#include "tests/unit/Fixture.h"
#include "tests/unit/Process.h"

namespace reclaimd::testing {
namespace {

using namespace std::chrono_literals;

constexpr const char* kPolicy = "rules:\n  - match: app.slice\n    floor: 64M\n";

class RecordTest : public ::testing::Test {
 protected:
  // Records `span` of the simulated machine: app.slice idle with 600 MiB of cache.
  void record(std::chrono::nanoseconds span, std::uint64_t limit = 64 << 20) {
    sim_.addCgroup("app.slice", 600 * kMiB);
    auto recorder = controller::Recorder::create(file(), limit, [&](const std::string& why) { ended_ = why; });
    ASSERT_TRUE(recorder) << recorder.error().message();
    std::unique_ptr<controller::Recorder> r = std::move(*recorder);
    auto policy = policies::parsePolicy(kPolicy, "policy.yaml");
    ASSERT_TRUE(policy);
    controller::Engine engine(*policy, controller::EngineSetup{false, "", false});
    r->begin(engine.setup(), {policies::PolicyText{"policy.yaml", kPolicy}});
    r->caps(fullCapabilities(), "start");
    engine.setCapabilities(fullCapabilities(), "start");
    controller::betweenTurns(engine, sim_, sim_, clock_, r.get());
    const TimePoint until = clock_.now() + span;
    while (clock_.now() < until)
      clock_.set(controller::runTurn(engine, sim_, sim_, clock_, clock_.now(), r.get()));
  }
  int replay(const std::string& text, std::string& out, std::string& err) {
    std::istringstream in(text);
    std::ostringstream o, e;
    const int code = controller::replayRecording(in, o, e);
    out = o.str();
    err = e.str();
    return code;
  }
  std::string file() const { return fx_.path("recording"); }
  std::string recorded() const { return fx_.read("recording"); }

  Fixture fx_;
  ManualClock clock_;
  SimMachine sim_{clock_};
  std::string ended_;
};

std::size_t countOf(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1))
    ++n;
  return n;
}

TEST_F(RecordTest, ARecordedRunReplaysToTheSameCommandsEveryTime) {
  record(4min);
  ASSERT_FALSE(sim_.writes().empty()) << "the run reclaimed";
  std::string out, err, again, err2;
  ASSERT_EQ(replay(recorded(), out, err), controller::kExitOk) << err;
  EXPECT_EQ(countOf(out, "command reclaim app.slice "), sim_.writes().size()) << out;
  EXPECT_NE(out.find("command watch "), std::string::npos) << "pressure scopes are commands too";
  ASSERT_EQ(replay(recorded(), again, err2), controller::kExitOk);
  EXPECT_EQ(out, again) << "the same every time";
}

TEST_F(RecordTest, ACommandThatDiffersFromTheRecordingIsNamed) {
  record(4min);
  std::string text = recorded();
  const std::size_t at = text.find("did reclaim app.slice ");
  ASSERT_NE(at, std::string::npos);
  const std::size_t end = text.find('\n', at);
  text.replace(at, end - at, "did reclaim app.slice 101 4096 swappiness=0");
  std::string out, err;
  EXPECT_EQ(replay(text, out, err), controller::kExitDataError);
  EXPECT_NE(err.find("where the recording has reclaim app.slice 101 4096"), std::string::npos) << err;
}

// A line of no kind the engine's flow has (here one of an older format's pulled readings).
TEST_F(RecordTest, ALineOutOfItsPlaceIsNamed) {
  record(30s);
  std::string text = recorded();
  const std::size_t in = text.find("\nin ");
  ASSERT_NE(in, std::string::npos);
  text.insert(text.find('\n', in + 1) + 1, "refaults ok 5\n");
  std::string out, err;
  EXPECT_EQ(replay(text, out, err), controller::kExitDataError);
  EXPECT_NE(err.find("a refaults line where a command, reads or the next input belongs"), std::string::npos) << err;
}

TEST_F(RecordTest, AChunksResultCarriesTheReadingsItAskedFor) {
  record(4min);
  const std::string text = recorded();
  const std::size_t did = text.find("\ndid reclaim app.slice ");
  ASSERT_NE(did, std::string::npos);
  const std::size_t ask = text.find('\n', did + 1) + 1;
  ASSERT_EQ(text.compare(ask, 4, "ask "), 0) << text.substr(did, 400);
  const std::size_t in = text.find('\n', ask) + 1;
  const std::string input = text.substr(in, text.find('\n', in) - in);
  EXPECT_EQ(input.rfind("in ", 0), 0u) << input;
  EXPECT_NE(input.find(" written "), std::string::npos) << input;
  EXPECT_NE(input.find(" app.slice "), std::string::npos) << "the cgroup's memory, read after the write: " << input;
  std::string out, err;
  EXPECT_EQ(replay(text, out, err), controller::kExitOk) << err;
}

TEST_F(RecordTest, ARecordingStopsAtItsLimitAndSaysWhy) {
  record(10min, 16 << 10);
  EXPECT_NE(ended_.find("limit of 16384 bytes"), std::string::npos) << ended_;
  const std::string text = recorded();
  EXPECT_LE(text.size(), 16u << 10);
  EXPECT_NE(text.find("\nend size-limit\n"), std::string::npos);
  std::string out, err;
  EXPECT_EQ(replay(text, out, err), controller::kExitOk) << err;
  EXPECT_NE(out.find("end size-limit"), std::string::npos);
}

// A recording cut short mid-line (the daemon killed during a write, a copy cut off) may end in a
// bare "did" or "ask": what it holds is replayed, and the cut line named, not an exception.
TEST_F(RecordTest, ARecordingCutAfterALinesKindIsRefusedWithAReason) {
  record(10min);
  const std::string text = recorded();
  for (const std::string kind : {"\ndid ", "\nask "}) {
    const std::size_t at = text.find(kind);
    ASSERT_NE(at, std::string::npos) << kind;
    const std::string cut = text.substr(0, at + kind.size() - 1);
    std::string out, err;
    EXPECT_EQ(replay(cut, out, err), controller::kExitDataError) << out;
    EXPECT_NE(err.find("a " + kind.substr(1, 3) + " line without its"), std::string::npos) << err;
  }
}

TEST_F(RecordTest, WhatIsNotARecordingIsRefusedWithAReason) {
  std::string out, err;
  EXPECT_EQ(replay("", out, err), controller::kExitDataError);
  EXPECT_NE(err.find("an empty file is not a recording"), std::string::npos) << err;
  EXPECT_EQ(replay("hello world\n", out, err), controller::kExitDataError);
  EXPECT_NE(err.find("not a reclaimd recording"), std::string::npos) << err;
  EXPECT_EQ(replay("reclaimd-recording 9\n", out, err), controller::kExitDataError);
  EXPECT_NE(err.find("version 9"), std::string::npos) << err;
  const std::string older = "reclaimd-recording " + std::to_string(controller::kRecordingVersion - 1) + "\n";
  EXPECT_EQ(replay(older + "setup 0 0 %\npolicy\n", out, err), controller::kExitDataError);
  EXPECT_NE(err.find("record it again with this reclaimd"), std::string::npos) << err;
  const std::string header = "reclaimd-recording " + std::to_string(controller::kRecordingVersion) + "\n";
  EXPECT_EQ(replay(header + "setup 0 0 %\npolicy\nin x\n", out, err), controller::kExitDataError);
  EXPECT_NE(err.find("a malformed input"), std::string::npos) << err;
  EXPECT_EQ(replay(header + "setup 0 0 %\npolicy\ncaps start / % 1 1 % 0 0 1 % 1 % % 1 1 % % 0\n", out, err),
            controller::kExitDataError);
  EXPECT_NE(err.find("a page size of 0 bytes"), std::string::npos) << err;
}

TEST(RecordCommand, ABadLimitOrAMissingRecordingIsAClearError) {
  Fixture fx;
  auto [code, out] =
      runCommand({RECLAIMD_BINARY, "record", fx.path("r"), "--record-limit", "12", "--status-socket", ""});
  EXPECT_EQ(code, controller::kExitUsage) << out;
  EXPECT_NE(out.find("--record-limit '12' is not a size of at least 4K"), std::string::npos) << out;
  std::tie(code, out) = runCommand({RECLAIMD_BINARY, "replay", fx.path("none")});
  EXPECT_EQ(code, controller::kExitNoInput) << out;
  EXPECT_NE(out.find("cannot open"), std::string::npos) << out;
}

}  // namespace
}  // namespace reclaimd::testing

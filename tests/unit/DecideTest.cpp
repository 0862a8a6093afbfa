// Engine::decide as the shell sees it: the commands a tick gives, in order, and what a result or
// a pending stop changes. The simulated machine carries the commands out.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <set>
#include <string>

#include "controller/shell/Turn.h"
#include "tests/unit/EngineHarness.h"

namespace reclaimd::testing {
namespace {

using namespace std::chrono_literals;
using controller::Command;

class DecideTest : public EngineHarness {
 protected:
  // One tick, each command carried out by the simulated machine; `stopAfterChunk`: a stop is
  // pending from the first chunk's result on.
  // `between`, when given, sees each Output the turn goes on from, and the Input about to answer
  // it (after the command was carried out and the reads taken).
  std::vector<Command> tick(bool stopAfterChunk = false,
                            const std::function<void(const controller::Output&, controller::Input&)>& between = {}) {
    controller::Input input;
    input.now = clock_.now();
    input.tick = true;
    input.readings = controller::takeReadings(controller::tickReads(), sim_);
    std::vector<Command> given;
    for (;;) {
      controller::Output out = engine_->decide(input);
      for (Event& e : out.events)
        events_.push_back(std::move(e));
      if (!controller::asks(out)) {
        EXPECT_TRUE(out.wake.has_value()) << "a turn ends with when to wake";
        wake_ = out.wake.value_or(clock_.now() + 1s);
        return given;
      }
      input = controller::Input{};
      if (out.command) {
        given.push_back(*out.command);
        input.result = controller::carryOut(*out.command, sim_, clock_);
      }
      input.readings = controller::takeReadings(out.read, sim_);
      input.now = clock_.now();
      input.stop = stopAfterChunk && !given.empty() && std::holds_alternative<controller::ReclaimChunk>(given.front());
      if (between) between(out, input);
    }
  }
  // Ticks until one gives a chunk to write; answers that tick's commands.
  std::vector<Command> firstWritingTick(bool stopAfterChunk = false) {
    for (int i = 0; i < 100; ++i) {
      clock_.set(wake_);
      auto given = tick(stopAfterChunk);
      if (!given.empty() && std::holds_alternative<controller::ReclaimChunk>(given.front())) return given;
    }
    ADD_FAILURE() << "no tick wrote";
    return {};
  }
  TimePoint wake_{};
};

TEST_F(DecideTest, AnIdleMachinesTickIsChunksOfTheRootToTheFloorThenACompaction) {
  sim_.addCgroup("work", 600 * kMiB);
  start();
  run(119s);
  ASSERT_TRUE(sim_.writes().empty());
  wake_ = clock_.now();
  const std::vector<Command> given = firstWritingTick();
  ASSERT_GE(given.size(), 2u);
  std::uint64_t asked = 0;
  for (std::size_t i = 0; i + 1 < given.size(); ++i) {
    const auto* chunk = std::get_if<controller::ReclaimChunk>(&given[i]);
    ASSERT_NE(chunk, nullptr) << "command " << i << " is " << controller::commandName(given[i]);
    EXPECT_EQ(chunk->path, "") << "the machine's target is the root";
    EXPECT_LE(chunk->bytes, 64 * kMiB);
    asked += chunk->bytes;
  }
  EXPECT_TRUE(std::holds_alternative<controller::Compact>(given.back())) << "a pass that freed memory compacts";
  EXPECT_EQ(asked, 256 * kMiB) << "one whole step (the default 256 MiB) in one tick";
}

TEST_F(DecideTest, APendingStopEndsTheTurnBeforeItsNextChunkAndItsCompaction) {
  sim_.addCgroup("work", 600 * kMiB);
  start();
  run(119s);
  wake_ = clock_.now();
  const std::vector<Command> given = firstWritingTick(true);
  ASSERT_EQ(given.size(), 1u) << "one chunk, then nothing: no second chunk, no compaction";
  const auto steps = named("reclaim_step");
  ASSERT_EQ(steps.size(), 1u);
  EXPECT_EQ(*steps[0].field("end"), "stopped");
}

// The tick carries the CPU times; a tick the shell gave without them is a skipped sample, and the
// turn ends there, waking as usual.
TEST_F(DecideTest, ATickCarriesItsCpuReadingAndOneWithoutIsASkippedSample) {
  start();
  const int cpuReads = sim_.reads["cpu"];
  controller::Input input;
  input.now = clock_.now();
  input.tick = true;
  controller::Output out = engine_->decide(input);
  EXPECT_EQ(sim_.reads["cpu"], cpuReads) << "the engine reads no CPU itself";
  EXPECT_FALSE(controller::asks(out));
  EXPECT_TRUE(out.wake.has_value());
  auto skipped = [](const Event& e) { return e.name() == "sample_skipped"; };
  ASSERT_EQ(std::count_if(out.events.begin(), out.events.end(), skipped), 1);
  clock_.advance(1s);
  wake_ = clock_.now();
  tick();
  EXPECT_EQ(sim_.reads["cpu"], cpuReads + 1) << "the shell reads it with the tick";
  EXPECT_EQ(count("sample_skipped"), 0u) << "taken";
}

// The verdict says what else a turn reads: a busy machine's tick asks for a busy scan (and
// nothing else of the tree) before the turn is planned; a quiet one asks for nothing.
TEST_F(DecideTest, ABusyTicksVerdictAsksForAScanBeforeTheTurnIsPlanned) {
  sim_.addCgroup("work", 100 * kMiB);
  sim_.setMachineBusy(0.5);
  start();
  controller::Input input;
  input.now = clock_.now();
  input.tick = true;
  input.readings = controller::takeReadings(controller::tickReads(), sim_);
  const controller::Output out = engine_->decide(input);
  EXPECT_FALSE(out.command.has_value());
  EXPECT_FALSE(out.wake.has_value()) << "the turn goes on with the readings";
  EXPECT_TRUE(out.read.scan);
  EXPECT_TRUE(out.read.memory.empty());
  const int scans = sim_.reads["scan"];
  controller::Input next;
  next.now = clock_.now();
  next.readings = controller::takeReadings(out.read, sim_);
  EXPECT_EQ(sim_.reads["scan"], scans + 1);
  const controller::Output planned = engine_->decide(next);
  EXPECT_FALSE(planned.read.scan) << "scanned once";
}

// A turn with work measures its targets from one read: the machine's meminfo and each measured
// target's memory.stat, asked for together, before the first chunk.
TEST_F(DecideTest, ATurnWithWorkAsksForItsTargetsCacheInOneRead) {
  sim_.addCgroup("app.slice", 600 * kMiB);
  start("rules:\n  - match: app.slice\n    floor: 64M\n");
  run(119s);
  ASSERT_TRUE(sim_.writes().empty());
  controller::Input input;
  input.now = clock_.now() + 2s;
  clock_.set(input.now);
  input.tick = true;
  input.readings = controller::takeReadings(controller::tickReads(), sim_);
  controller::Output out = engine_->decide(input);
  // Before it, the verdict's reads (this tick starts the idle period: meminfo for its line).
  for (int i = 0; i < 4 && !out.command && out.read.memory.empty(); ++i) {
    controller::Input next;
    next.now = clock_.now();
    next.readings = controller::takeReadings(out.read, sim_);
    out = engine_->decide(next);
  }
  ASSERT_TRUE(out.read.meminfo) << "the cache is read before the plan";
  EXPECT_FALSE(out.command.has_value());
  ASSERT_EQ(out.read.memory.size(), 1u);
  EXPECT_EQ(out.read.memory[0].path, "app.slice");
}

// What the shell watches is what the engine has scopes for, each once, as targets come and go.
TEST_F(DecideTest, TheWatchesFollowTheTargetsAsTheyComeAndGo) {
  auto watchedMatchesScopes = [&] {
    std::set<controller::ScopeId> want{controller::kMachineScope};
    for (const auto& t : engine_->targets())
      if (t.scope) want.insert(t.id);
    std::set<controller::ScopeId> have;
    for (const auto& [id, w] : sim_.watching)
      have.insert(id);
    return want == have && want.size() > 1;
  };
  sim_.addCgroup("app.slice", 0);
  for (int i = 0; i < 40; ++i)
    sim_.addCgroup("app.slice/s" + std::to_string(i) + ".service", 100 * kMiB);
  sim_.addCgroup("work.slice", 10 * kMiB);
  sim_.chargeMachineTo("work.slice");
  sim_.setMachineBusy(0.5);  // the machine never idle: the quiet services are the targets
  start("reclaim: {floor: 64M}\nidle: {grace: 20s, interval: 5s}\n"
        "rules:\n  - match: \"app.slice/*\"\n    idle_source: cgroup\n    floor: 24M\n    grace: 10s\n");
  run(60s);
  ASSERT_TRUE(watchedMatchesScopes()) << sim_.watching.size() << " watched, " << engine_->targets().size()
                                      << " targets, " << sim_.writes().size() << " writes";
  const std::size_t before = sim_.watching.size();
  for (int i = 0; i < 40; i += 2)
    sim_.removeCgroup("app.slice/s" + std::to_string(i) + ".service");
  sim_.addCgroup("app.slice/late.service", 100 * kMiB);
  run(60s);
  EXPECT_TRUE(watchedMatchesScopes()) << sim_.watching.size() << " watched";
  EXPECT_LT(sim_.watching.size(), before) << "the removed cgroups' scopes are forgotten";
}

// A target's trigger that says its cgroup was removed: the next turn walks again and the target
// is gone, without waiting for a read of its files to fail.
TEST_F(DecideTest, ATriggerThatSaysItsCgroupLeftHasTheNextTurnWalkItAway) {
  sim_.addCgroup("work", 3000 * kMiB);
  start("rules:\n  - match: work\n    floor: 128M\n");
  ASSERT_TRUE(runUntil([&] { return !steps("work").empty(); }, 3min));
  auto isWork = [](const controller::TargetState& t) { return t.path == "work"; };
  ASSERT_TRUE(std::any_of(engine_->targets().begin(), engine_->targets().end(), isWork));
  const int walks = sim_.walks;
  sim_.removeCgroup("work");
  sim_.pressureFires("work", true);
  ASSERT_TRUE(runUntil([] { return true; }, 1min));  // one turn
  EXPECT_EQ(sim_.walks, walks + 1) << "walked again at once";
  EXPECT_TRUE(std::none_of(engine_->targets().begin(), engine_->targets().end(), isWork));
}

// Targets judged by their own CPU: the turn asks for their cpu.stat in a phase of its own, before
// anything is written, and judges each by it: the quiet one is reclaimed, the busy one is not.
TEST_F(DecideTest, ATurnAsksForTheCpuOfTargetsJudgedByTheirOwnBeforeItWrites) {
  sim_.addCgroup("app.slice", 0);
  sim_.addCgroup("app.slice/quiet.service", 300 * kMiB);
  sim_.addCgroup("app.slice/busy.service", 300 * kMiB);
  sim_.cgroup("app.slice/busy.service").cpuShare = 0.5;
  sim_.setMachineBusy(0.5);
  sim_.chargeMachineTo("app.slice/busy.service");
  start("idle: {grace: 20s, interval: 5s}\n"
        "rules:\n  - match: \"app.slice/*\"\n    idle_source: cgroup\n    floor: 32M\n    grace: 10s\n");
  wake_ = clock_.now();
  std::vector<std::set<std::string>> cpuAsked;  // each Output's cgroups whose CPU it asked for
  std::vector<bool> wroteBefore;                // whether the turn had written before it
  bool wrote = false;
  std::vector<Command> given;
  while (!wrote && elapsed() < 1min) {
    clock_.set(wake_);
    given = tick(false, [&](const controller::Output& out, controller::Input&) {
      std::set<std::string> paths;
      for (const auto& c : out.read.cgroupCpu)
        paths.insert(c.path);
      cpuAsked.push_back(paths);
      wroteBefore.push_back(wrote);
      if (out.command && std::holds_alternative<controller::ReclaimChunk>(*out.command)) wrote = true;
    });
  }
  ASSERT_TRUE(wrote) << "the quiet service was never reclaimed";
  const std::set<std::string> both{"app.slice/busy.service", "app.slice/quiet.service"};
  bool askedBoth = false;
  for (std::size_t i = 0; i < cpuAsked.size(); ++i) {
    if (cpuAsked[i] != both) continue;
    askedBoth = true;
    EXPECT_FALSE(wroteBefore[i]) << "the CPU is read before the turn writes";
  }
  EXPECT_TRUE(askedBoth) << "one read names both targets' cpu.stat";
  for (const Command& c : given) {
    if (const auto* chunk = std::get_if<controller::ReclaimChunk>(&c)) {
      EXPECT_EQ(chunk->path, "app.slice/quiet.service") << "the busy service keeps its cache";
    }
  }
  run(2min);
  EXPECT_TRUE(reclaims("app.slice/busy.service").empty());
  EXPECT_EQ(sim_.cgroup("app.slice/quiet.service").file, 32 * kMiB);
}

// A target's cgroup leaves in the middle of a turn, after the turn asked for its cache: the read
// answers ENOENT, the walk falls due, and the turn walks again before it writes (no chunk goes
// to the cgroup that left); the target is gone, and the other one is reclaimed.
TEST_F(DecideTest, ACgroupThatLeavesMidTurnIsWalkedAwayBeforeTheTurnWrites) {
  sim_.addCgroup("a.slice", 400 * kMiB);
  sim_.addCgroup("b.slice", 400 * kMiB);
  start("rules:\n  - match: a.slice\n    floor: 64M\n  - match: b.slice\n    floor: 64M\n");
  run(110s);
  ASSERT_TRUE(sim_.writes().empty());
  wake_ = clock_.now();
  bool removed = false;
  int walksAfter = -1;
  std::vector<Command> given;
  for (int i = 0; i < 30 && !removed; ++i) {
    clock_.set(wake_);
    given = tick(false, [&](const controller::Output& out, controller::Input& next) {
      const bool asksB = std::any_of(out.read.memory.begin(), out.read.memory.end(),
                                     [](const controller::CgroupKey& k) { return k.path == "b.slice"; });
      if (removed || !asksB || out.command) return;
      // The shell read b.slice's memory.stat a moment after the cgroup left.
      sim_.removeCgroup("b.slice");
      next.readings = controller::takeReadings(out.read, sim_);
      removed = true;
      walksAfter = sim_.walks;
    });
  }
  ASSERT_TRUE(removed) << "no turn asked for b.slice's cache";
  EXPECT_GT(sim_.walks, walksAfter) << "walked again within the turn";
  bool wroteA = false;
  for (const Command& c : given) {
    const auto* chunk = std::get_if<controller::ReclaimChunk>(&c);
    if (!chunk) continue;
    EXPECT_NE(chunk->path, "b.slice") << "no chunk for a cgroup that left";
    wroteA = wroteA || chunk->path == "a.slice";
  }
  EXPECT_TRUE(wroteA) << "the turn goes on with the target still there";
  EXPECT_TRUE(std::none_of(engine_->targets().begin(), engine_->targets().end(),
                           [](const controller::TargetState& t) { return t.path == "b.slice" && !t.gone; }));
  for (const Event& e : events_)
    EXPECT_EQ(e.text().find("asked for and not read"), std::string::npos) << e.text();
}

TEST_F(DecideTest, AReloadWatchesEveryScopeAfresh) {
  start();
  ASSERT_EQ(sim_.watching.count(controller::kMachineScope), 1u) << "the machine's scope is watched from the start";
  reload(policies::Policy{});
  controller::Input input;
  input.now = clock_.now();
  controller::Output out = engine_->decide(input);
  ASSERT_TRUE(out.command.has_value());
  const auto* forget = std::get_if<controller::UnwatchScope>(&*out.command);
  ASSERT_NE(forget, nullptr) << controller::commandName(*out.command);
  EXPECT_EQ(forget->id, controller::kMachineScope);
  input.result = controller::Unwatched{};
  out = engine_->decide(input);
  ASSERT_TRUE(out.command.has_value());
  const auto* watch = std::get_if<controller::WatchScope>(&*out.command);
  ASSERT_NE(watch, nullptr) << controller::commandName(*out.command);
  EXPECT_EQ(watch->id, controller::kMachineScope);
  input.result = controller::Watched{controller::PressureFeed::Trigger, "test", false};
  out = engine_->decide(input);
  EXPECT_FALSE(out.command.has_value()) << "watched once: nothing more to do";
  EXPECT_FALSE(out.wake.has_value()) << "no turn began: no wake to tell";
}

}  // namespace
}  // namespace reclaimd::testing

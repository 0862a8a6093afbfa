// The engine over a simulated machine, with what the shell would do around it: scopes watched,
// commands carried out and recorded, events collected. Scenario tests state what the engine did
// as commands (reclaims, steps, drops, compactions) and what it is as its status data; an event's
// text is checked only where the line itself is the subject.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <set>
#include <string>
#include <variant>

#include "controller/engine/Engine.h"
#include "controller/engine/StatusData.h"
#include "policies/Loader.h"
#include "tests/unit/SimMachine.h"

namespace reclaimd::testing {

// A command the engine gave, when, and in which turn (a step is one turn's chunks to a target).
struct Sent {
  TimePoint at;
  int turn = 0;
  controller::Command command;
};

// A step as its commands show it: the chunks one turn sent to one cgroup.
struct Step {
  TimePoint at;
  std::string path;
  std::uint64_t bytes = 0;  // asked, all chunks together
  std::size_t chunks = 0;
};

// Records the commands of a run, as `reclaimd record` sees them.
class CommandLog final : public controller::DecideLog {
 public:
  explicit CommandLog(const Clock& clock) : clock_(clock) {}
  void input(const controller::Input& in) override { turn_ += in.tick ? 1 : 0; }
  void did(const controller::Command& command) override { sent.push_back(Sent{clock_.now(), turn_, command}); }
  std::vector<Sent> sent;

 private:
  const Clock& clock_;
  int turn_ = 0;
};

class EngineHarness : public ::testing::Test {
 protected:
  void start(const std::string& policyYaml = "", bool dryRun = false);
  void start(policies::Policy policy, bool dryRun = false);
  // Runs turns for `span` of simulated time.
  void run(std::chrono::nanoseconds span);
  // Runs until `done` or `limit` passes; true when `done` was met.
  bool runUntil(const std::function<bool()>& done, std::chrono::nanoseconds limit);
  std::chrono::nanoseconds elapsed() const { return clock_.now() - start_; }

  // The commands so far. `path` (when given) keeps those to that cgroup ("" is the root).
  std::vector<controller::ReclaimChunk> reclaims(const std::optional<std::string>& path = {}) const;
  std::vector<Step> steps(const std::optional<std::string>& path = {}) const;
  std::size_t drops() const { return sentOf<controller::DropCaches>(); }
  std::size_t compactions() const { return sentOf<controller::Compact>(); }
  std::size_t reprobes() const { return sentOf<controller::Reprobe>(); }
  // The engine's state, as `reclaimd status` shows it.
  controller::Status status() const;
  // Backoffs begun so far: all scopes', or the scope named ("machine" or a cgroup).
  std::uint64_t backoffs(const std::optional<std::string>& scope = {}) const;
  // Whether any pressure scope is backed off now.
  bool backedOff() const;

  // Writes to the cgroup at `path` so far ("" is the root).
  std::size_t writesTo(const std::string& path) const;
  // File cache of `path`'s subtree, MiB.
  double fileMiB(const std::string& path) const { return static_cast<double>(sim_.subtreeFile(path)) / kMiB; }
  // Events by name: for checks whose subject is the line the engine says.
  std::size_t count(const std::string& name) const;
  // The events named `name`, oldest first.
  std::vector<Event> named(const std::string& name) const;
  // Writes after index `from`.
  std::vector<Write> writesSince(std::size_t from) const;
  // The machine stalls half the time, its PSI trigger fires, and 2 s pass: one backoff.
  void stallTheMachine();
  // The backoff scenarios' start: a 3000 MiB cgroup, 64 MiB steps, a 30 s calm period; two
  // steps, then the machine stalls. False when the steps never came.
  bool twoStepsThenAStall();
  // The probe-round scenarios' start: a busy machine whose 140 MiB hot set (of 600 MiB, one cgroup)
  // is re-read every 20 s, until a probe's refaults are coming in. False when they never came.
  bool aProbeRoundComingIn();
  bool probeRoundComingIn() { return status().targets.at(0).trimWhy.find("coming in") != std::string::npos; }
  // What SIGHUP does: the engine takes `policy` (its next turn has every scope watched afresh).
  void reload(policies::Policy policy) {
    engine_->setPolicy(std::move(policy));
    for (Event& e : engine_->takeEvents())
      events_.push_back(std::move(e));
  }
  double mib(const std::string& value) const { return std::stod(value); }

  ManualClock clock_;
  SimMachine sim_{clock_};
  CommandLog commands_{clock_};
  std::unique_ptr<controller::Engine> engine_;
  Events events_;
  TimePoint start_;

 private:
  void afterTurn();
  template <typename C>
  std::size_t sentOf() const {
    std::size_t n = 0;
    for (const Sent& s : commands_.sent)
      n += std::holds_alternative<C>(s.command) ? 1 : 0;
    return n;
  }
};

}  // namespace reclaimd::testing

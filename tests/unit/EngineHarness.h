// The engine over a simulated machine, with what the shell would do around it: scopes watched,
// events collected. Scenario tests read the engine's events (structured) and the machine's
// writes, never a log.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <set>
#include <string>

#include "controller/engine/Engine.h"
#include "policies/Loader.h"
#include "tests/unit/SimMachine.h"

namespace reclaimd::testing {

class EngineHarness : public ::testing::Test {
 protected:
  void start(const std::string& policyYaml = "", bool dryRun = false);
  void start(policies::Policy policy, bool dryRun = false);
  // Runs turns for `span` of simulated time.
  void run(std::chrono::nanoseconds span);
  // Runs until `done` or `limit` passes; true when `done` was met.
  bool runUntil(const std::function<bool()>& done, std::chrono::nanoseconds limit);
  std::chrono::nanoseconds elapsed() const { return clock_.now() - start_; }

  std::size_t count(const std::string& name) const;
  // The events named `name`, oldest first.
  std::vector<Event> named(const std::string& name) const;
  // Writes after index `from`.
  std::vector<Write> writesSince(std::size_t from) const;
  // The machine stalls half the time, its PSI trigger fires, and 2 s pass: one backoff.
  void stallTheMachine();
  // What SIGHUP does: the engine takes `policy` (its next turn has every scope watched afresh).
  void reload(policies::Policy policy) {
    engine_->setPolicy(std::move(policy));
    for (Event& e : engine_->takeEvents())
      events_.push_back(std::move(e));
  }
  double mib(const std::string& value) const { return std::stod(value); }

  ManualClock clock_;
  SimMachine sim_{clock_};
  std::unique_ptr<controller::Engine> engine_;
  Events events_;
  TimePoint start_;

 private:
  void afterTurn();
};

}  // namespace reclaimd::testing

#include "tests/unit/EngineHarness.h"

#include <algorithm>

namespace reclaimd::testing {

void EngineHarness::start(const std::string& policyYaml, bool dryRun) {
  auto policy = policyYaml.empty() ? Result<policies::Policy>(policies::Policy{})
                                   : policies::parsePolicy(policyYaml, "policy.yaml");
  ASSERT_TRUE(policy) << policy.error().message();
  start(*policy, dryRun);
}

void EngineHarness::start(policies::Policy policy, bool dryRun) {
  engine_ = std::make_unique<controller::Engine>(std::move(policy), controller::EngineSetup{dryRun, ""});
  engine_->setCapabilities(fullCapabilities(), "start");
  start_ = clock_.now();
  controller::betweenTurns(*engine_, sim_, sim_, clock_, &commands_);  // what the daemon does after the probe
  afterTurn();
}

void EngineHarness::afterTurn() {
  for (Event& e : std::exchange(sim_.published, {}))
    events_.push_back(std::move(e));
  for (Event& e : engine_->takeEvents())
    events_.push_back(std::move(e));
}

void EngineHarness::run(std::chrono::nanoseconds span) {
  runUntil([] { return false; }, span);
}

bool EngineHarness::runUntil(const std::function<bool()>& done, std::chrono::nanoseconds limit) {
  const TimePoint until = clock_.now() + limit;
  bool met = false;
  testing::runUntil(*engine_, sim_, clock_, until, [&] {
    afterTurn();
    return met = done();
  }, &commands_);
  return met;
}

std::size_t EngineHarness::writesTo(const std::string& path) const {
  return static_cast<std::size_t>(
      std::count_if(sim_.writes().begin(), sim_.writes().end(), [&](const Write& w) { return w.path == path; }));
}

std::size_t EngineHarness::count(const std::string& name) const {
  return named(name).size();
}

std::vector<Event> EngineHarness::named(const std::string& name) const {
  std::vector<Event> out;
  for (const Event& e : events_)
    if (e.name() == name) out.push_back(e);
  return out;
}

void EngineHarness::stallTheMachine() {
  sim_.setMachineStall(0.5);
  sim_.pressureFires("");
  run(std::chrono::seconds(2));
}

bool EngineHarness::twoStepsThenAStall() {
  sim_.addCgroup("work", 3000 * kMiB);
  start("reclaim: {step_min: 64M, step_max: 64M, floor: 128M}\npressure: {calm: 30s, min_step: 16M}\n");
  if (!runUntil([&] { return steps().size() >= 2; }, std::chrono::minutes(3))) return false;
  stallTheMachine();
  return true;
}

bool EngineHarness::aProbeRoundComingIn() {
  sim_.addCgroup("work", 600 * kMiB);
  sim_.cgroup("work").hot = 140 * kMiB;
  sim_.cgroup("work").rereadEvery = std::chrono::seconds(20);
  sim_.cgroup("work").readTakes = std::chrono::seconds(8);
  sim_.chargeMachineTo("work");
  sim_.setMachineBusy(0.04);
  start();
  return runUntil([&] { return probeRoundComingIn(); }, std::chrono::minutes(20));
}

std::vector<Write> EngineHarness::writesSince(std::size_t from) const {
  const auto& w = sim_.writes();
  return from >= w.size() ? std::vector<Write>{} : std::vector<Write>(w.begin() + static_cast<long>(from), w.end());
}

std::vector<controller::ReclaimChunk> EngineHarness::reclaims(const std::optional<std::string>& path) const {
  std::vector<controller::ReclaimChunk> out;
  for (const Sent& s : commands_.sent)
    if (const auto* c = std::get_if<controller::ReclaimChunk>(&s.command); c && (!path || c->path == *path))
      out.push_back(*c);
  return out;
}

std::vector<Step> EngineHarness::steps(const std::optional<std::string>& path) const {
  std::vector<Step> out;
  int turn = -1;
  for (const Sent& s : commands_.sent) {
    const auto* c = std::get_if<controller::ReclaimChunk>(&s.command);
    if (!c || (path && c->path != *path)) continue;
    if (out.empty() || s.turn != turn || out.back().path != c->path) out.push_back(Step{s.at, c->path});
    turn = s.turn;
    out.back().bytes += c->bytes;
    ++out.back().chunks;
  }
  return out;
}

controller::Status EngineHarness::status() const {
  controller::Status s;
  engine_->fill(s, clock_.now(), 0, [](TimePoint) { return std::string(); });
  return s;
}

std::uint64_t EngineHarness::backoffs(const std::optional<std::string>& scope) const {
  std::uint64_t n = 0;
  for (const controller::ScopeStatus& p : status().pressure)
    n += !scope || p.scope == *scope ? p.backoffs : 0;
  return n;
}

bool EngineHarness::backedOff() const {
  for (const controller::ScopeStatus& p : status().pressure)
    if (p.backedOff) return true;
  return false;
}

}  // namespace reclaimd::testing

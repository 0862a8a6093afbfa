// Property tests: thousands of random sequences of machine behaviour and kernel faults (EAGAIN,
// EINVAL, ENOENT, ENODEV, EBUSY, EINTR, EMFILE, failed and short reads, slow writes, cgroups
// coming and going, pressure, refaults, reloads) through the engine and the turn code. Whatever
// happens: no crash, never a request that would take a target below its floor (the root's is the machine's),
// never a write to a disabled cgroup or to any cgroup above one (quiet systemd units, idle.units,
// included).
#include <gtest/gtest.h>

#include <random>

#include "policies/Rules.h"
#include "tests/unit/EngineHarness.h"

namespace reclaimd::testing {
namespace {

using namespace std::chrono_literals;

constexpr unsigned kSequences = 2000;

constexpr const char* kRules = R"(reclaim: {floor: 64M, step_min: 32M, step_max: 128M, chunk: 16M}
idle: {grace: 20s, interval: 5s}
rules:
  - match: kept.slice
    mode: disabled
  - match: "app.slice/*"
    idle_source: cgroup
    floor: 24M
    grace: 10s
  - match: app.slice/db.service
    mode: disabled
)";
constexpr const char* kNoRules =
    "reclaim: {floor: 64M, step_min: 32M, step_max: 128M, chunk: 16M}\nidle: {grace: 20s, interval: 5s}\n";

const char* const kPaths[] = {
    "app.slice",  "app.slice/web.service", "app.slice/db.service", "app.slice/db.service/x", "app.slice/worker.service",
    "kept.slice", "kept.slice/a.scope",    "other.slice",          "other.slice/b.scope",    "other.slice/c"};

class Sequence : public EngineHarness {
 public:
  void TestBody() override {}

  void play(unsigned seed) {
    rng_.seed(seed);
    const bool rules = seed % 4 != 0;
    auto policy = policies::parsePolicy(rules ? kRules : kNoRules, "policy.yaml");
    ASSERT_TRUE(policy);
    policy_ = *policy;
    for (const char* p : kPaths)
      sim_.addCgroup(p, pick(0, 400) * kMiB);
    sim_.beforeWrite = [this](const std::string& path, std::uint64_t bytes) { check(path, bytes); };
    start(policy_);
    for (int round = 0; round < 40 && !::testing::Test::HasFailure(); ++round) {
      perturb();
      run(std::chrono::seconds(pick(1, 8)));
    }
    controller::Status st;
    engine_->fill(st, clock_.now(), 0, [](TimePoint) { return std::string(); });
    unitsTaken = st.unitsTaken;
  }
  std::uint64_t unitsTaken = 0;  // quiet units (idle.units) the sequence made targets

 private:
  std::uint64_t pick(std::uint64_t lo, std::uint64_t hi) {
    return std::uniform_int_distribution<std::uint64_t>(lo, hi)(rng_);
  }
  bool chance(unsigned percent) { return pick(0, 99) < percent; }

  void perturb() {
    if (chance(30)) sim_.setMachineBusy(chance(50) ? 0.0 : static_cast<double>(pick(0, 150)) / 100);
    if (chance(20)) churn();
    if (chance(20)) writeFault();
    if (chance(20)) readFault();
    if (chance(15)) sim_.cgroup(existing()).refaults += pick(0, 100000);
    if (chance(15)) sim_.cgroup(existing()).file += pick(0, 200) * kMiB;
    if (chance(10)) pressure();
    if (chance(10)) sim_.setWriteTime(std::chrono::milliseconds(pick(1, 2000)));
    if (chance(10)) sim_.setOvershoot(static_cast<double>(pick(0, 150)) / 100);
    if (chance(5)) engine_->setPolicy(policy_);
    if (chance(5)) sim_.cgroup(existing()).cpuShare = static_cast<double>(pick(0, 100)) / 100;
  }

  std::string existing() {
    std::vector<std::string> all;
    for (const char* p : kPaths)
      if (sim_.has(p)) all.push_back(p);
    return all.empty() ? "" : all[pick(0, all.size() - 1)];
  }

  void churn() {
    const char* p = kPaths[pick(0, std::size(kPaths) - 1)];
    const std::string path(p);
    const auto slash = path.rfind('/');
    if (sim_.has(path))
      sim_.removeCgroup(path);
    else if (slash == std::string::npos || sim_.has(path.substr(0, slash)))
      sim_.addCgroup(path, pick(0, 300) * kMiB);
  }

  void writeFault() {
    static const std::pair<cgroup::ReclaimStatus, int> kFaults[] = {
        {cgroup::ReclaimStatus::Partial, EAGAIN}, {cgroup::ReclaimStatus::Unsupported, EINVAL},
        {cgroup::ReclaimStatus::Gone, ENOENT},    {cgroup::ReclaimStatus::Gone, ENODEV},
        {cgroup::ReclaimStatus::Failed, EBUSY},   {cgroup::ReclaimStatus::Interrupted, EINTR},
        {cgroup::ReclaimStatus::Failed, EMFILE}};
    const auto& f = kFaults[pick(0, std::size(kFaults) - 1)];
    sim_.queueWriteStatus(f.first, f.second);
  }

  void readFault() {
    static const char* const kKinds[] = {"cpu", "meminfo", "memory", "cpu.stat", "pressure", "tree", "vmstat"};
    static const int kErrnos[] = {EIO, EMFILE, ENFILE, ENOENT, ENODEV, EINTR, EOVERFLOW};
    sim_.failReads(kKinds[pick(0, std::size(kKinds) - 1)], kErrnos[pick(0, std::size(kErrnos) - 1)],
                   static_cast<int>(pick(1, 3)));
  }

  void pressure() {
    const double share = static_cast<double>(pick(0, 60)) / 100;
    if (chance(50)) {
      sim_.setMachineStall(share);
      sim_.pressureFires("");
    } else if (const std::string p = existing(); !p.empty()) {
      sim_.cgroup(p).stallShare = share;
      sim_.pressureFires(p, chance(10));
    }
  }

  // The invariants, checked before each write with the model as it is.
  void check(const std::string& path, std::uint64_t bytes) {
    for (const char* p : kPaths) {
      if (!sim_.has(p) || policy_.rules.empty() || !controller::within(p, path)) continue;
      EXPECT_FALSE(disabled(p)) << "wrote " << bytes << " to " << path << ", which holds disabled " << p;
    }
    for (const auto& t : engine_->targets()) {
      if (t.path != path) continue;
      EXPECT_LE(bytes + t.floor(), sim_.subtreeFile(path)) << "asked below " << path << "'s floor";
    }
  }

  bool disabled(const std::string& path) const {
    for (std::string p = path;; p = p.substr(0, p.rfind('/'))) {
      const int rule = policies::governingRule(policy_.rules, p);
      if (rule >= 0) return policy_.rules[static_cast<std::size_t>(rule)].mode == policies::Mode::Disabled;
      if (p.find('/') == std::string::npos) return false;
    }
  }

  std::mt19937_64 rng_;
  policies::Policy policy_;
};

TEST(EngineProperties, RandomFaultsNeverBreakAFloorNorTouchAProtectedCgroup) {
  unsigned withUnits = 0;
  for (unsigned seed = 0; seed < kSequences; ++seed) {
    Sequence s;
    s.play(seed);
    if (::testing::Test::HasFailure()) {
      ADD_FAILURE() << "seed " << seed;
      return;
    }
    withUnits += s.unitsTaken > 0 ? 1 : 0;
  }
  // The sequences reach the paths they are meant to test: quiet units taken as targets.
  EXPECT_GE(withUnits, kSequences / 4) << "sequences that took a quiet unit";
}

}  // namespace
}  // namespace reclaimd::testing

// The start's word on the LRU: where the kernel has the multi-gen LRU built in but off, a
// daemon that may trim a busy machine says once how to switch it on; nowhere else.
#include <gtest/gtest.h>
#include <signal.h>

#include <string>

#include "tests/unit/DaemonHarness.h"
#include "tests/unit/SimFiles.h"

namespace reclaimd::testing {
namespace {

using namespace std::chrono_literals;

constexpr const char* kPolicy = "idle:\n  grace: 1s\n  interval: 1s\n  sample_period: 100ms\n";
constexpr const char* kAdvice = "event=lru_classic";

class DaemonLruTest : public DaemonHarness {
 protected:
  // Runs the daemon with `policy` over a sysfs whose lru_gen/enabled reads `lruGen` (absent when
  // empty) until its start is logged, stops it, and returns how often it gave the advice. Once a
  // test: a second run would find the first's start in the log and stop the daemon too early.
  std::size_t advised(const std::string& policy, const std::string& lruGen) {
    SimFiles machine(fx_);
    fx_.write("policy.yaml", policy);
    fx_.write("sys/kernel/mm/.keep", "");
    if (!lruGen.empty()) fx_.write("sys/kernel/mm/lru_gen/enabled", lruGen);
    auto d = start({"--sys-root", fx_.path("sys")});
    EXPECT_TRUE(waitLog("event=start")) << log();
    d->signal(SIGTERM);
    EXPECT_EQ(d->wait(5s), 0) << log();
    return count(kAdvice);
  }
};

TEST_F(DaemonLruTest, TheMultiGenLruBuiltInButOffIsNamedOnceWithItsSwitch) {
  EXPECT_EQ(advised(kPolicy, "0x0000\n"), 1u) << log();
  EXPECT_TRUE(logHas("event=lru_classic lru_gen_enabled=0x0000 ")) << log();
  EXPECT_TRUE(logHas("echo y > /sys/kernel/mm/lru_gen/enabled")) << log();
  // After the start line, before the first turn's events: read with the start.
  EXPECT_LT(log().find("event=start"), log().find(kAdvice)) << log();
}

TEST_F(DaemonLruTest, TheMultiGenLruOnIsNotNamed) {
  EXPECT_EQ(advised(kPolicy, "0x0007\n"), 0u) << log();
}

TEST_F(DaemonLruTest, AKernelWithoutTheMultiGenLruIsNotNamed) {
  EXPECT_EQ(advised(kPolicy, ""), 0u) << log();
}

TEST_F(DaemonLruTest, AnUnreadableSwitchIsNotNamed) {
  EXPECT_EQ(advised(kPolicy, "yes please\n"), 0u) << log();
}

TEST_F(DaemonLruTest, APolicyWithTrimmingOffIsNotTold) {
  EXPECT_EQ(advised(std::string(kPolicy) + "trim:\n  enabled: false\n", "0x0000\n"), 0u) << log();
}

TEST_F(DaemonLruTest, DroppingCachesIsNotTold) {
  EXPECT_EQ(advised(std::string(kPolicy) + "mode: dropcache\n", "0x0000\n"), 0u) << log();
}

TEST_F(DaemonLruTest, ARuleThatTrimsIsEnough) {
  const std::string policy = std::string(kPolicy) +
                             "trim:\n  enabled: false\nrules:\n  - match: build.slice\n    trim: true\n";
  EXPECT_EQ(advised(policy, "0x0000\n"), 1u) << log();
}

}  // namespace
}  // namespace reclaimd::testing

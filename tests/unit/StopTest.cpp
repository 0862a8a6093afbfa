// Stopping: the last metrics write happens while the log is up, and a failed one neither
// crashes the daemon nor leaves a file that says it runs.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>

#include <filesystem>

#include "controller/operate/Endpoints.h"
#include "tests/unit/DaemonHarness.h"
#include "tests/unit/SimFiles.h"
#include "tests/unit/Fixture.h"

namespace reclaimd::testing {
namespace {

using namespace std::chrono_literals;

class StopTest : public DaemonHarness {};

TEST_F(StopTest, AFailedLastMetricsWriteIsLoggedAndTheDaemonExitsCleanly) {
  SimFiles m(fx_);
  fx_.mkdir("textfile");
  auto d = startWith("mode: gradual\n", {"--metrics-file", fx_.path("textfile/reclaimd.prom")});
  ASSERT_TRUE(eventually(
      [&] { return fx_.read("textfile/reclaimd.prom").find("\nreclaimd_up 1\n") != std::string::npos; }, 10s))
      << log();
  std::filesystem::remove_all(fx_.path("textfile"));  // the directory went away under the daemon
  const std::size_t before = log().size();
  d->signal(SIGTERM);
  EXPECT_EQ(d->wait(10s), 0) << "no crash on the way out\n" << log();
  EXPECT_TRUE(logHas("event=metrics_file_failed", before)) << log();
}

// A last write that fails where the old file can still be removed (the file system is full,
// here a file size limit): the file that said reclaimd_up 1 is gone rather than left stale.
TEST(Stop, AFailedLastWriteRemovesTheFileThatSaysUp) {
  Fixture fx;
  controller::Endpoints endpoints;
  controller::EndpointOptions options;
  options.statusSocket = "";
  options.metricsFile = fx.path("reclaimd.prom");
  ASSERT_TRUE(endpoints.open(options).ok());
  const std::string metrics = "# HELP reclaimd_up up\nreclaimd_up 1\n" + std::string(4096, '#') + "\n";
  endpoints.writeMetricsFile([&] { return metrics; }, TimePoint{}, true);
  ASSERT_NE(fx.read("reclaimd.prom").find("\nreclaimd_up 1\n"), std::string::npos);
  rlimit saved{};
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &saved), 0);
  const auto oldHandler = ::signal(SIGXFSZ, SIG_IGN);
  rlimit small = saved;
  small.rlim_cur = 64;
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &small), 0);
  endpoints.stop();
  ::setrlimit(RLIMIT_FSIZE, &saved);
  ::signal(SIGXFSZ, oldHandler);
  EXPECT_FALSE(std::filesystem::exists(fx.path("reclaimd.prom"))) << fx.read("reclaimd.prom");
}

}  // namespace
}  // namespace reclaimd::testing

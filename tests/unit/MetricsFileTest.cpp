// The metrics file: written atomically where no planted link can redirect it, its failures said
// once a minute on one escaped line, and marked stopped at the end.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <string>

#include "base/Clock.h"
#include "base/Event.h"
#include "controller/operate/Endpoints.h"
#include "controller/operate/MetricsFile.h"
#include "tests/unit/CapturedLog.h"
#include "tests/unit/Fixture.h"

namespace reclaimd::testing {
namespace {

using namespace std::chrono_literals;
using controller::EndpointOptions;
using controller::Endpoints;

// A user who may write the metrics directory plants symlinks at the names root writes: none is
// followed, and the file ends up a regular 0644 file.
TEST(MetricsFile, PlantedSymlinksNeverRedirectTheWrite) {
  Fixture fx;
  fx.write("secret", "root's own");
  ::chmod(fx.path("secret").c_str(), 0600);
  std::filesystem::create_symlink(fx.path("secret"), fx.path("m.prom.tmp"));
  fx.write("other", "untouched");
  std::filesystem::create_symlink(fx.path("other"), fx.path("m.prom"));
  ASSERT_TRUE(controller::writeFileAtomically(fx.path("m.prom"), "reclaimd_up 1\n").ok());
  EXPECT_EQ(fx.read("secret"), "root's own");
  EXPECT_EQ(fx.read("other"), "untouched");
  struct stat st {};
  ASSERT_EQ(::stat(fx.path("secret").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  ASSERT_EQ(::lstat(fx.path("m.prom").c_str(), &st), 0);
  EXPECT_TRUE(S_ISREG(st.st_mode));
  EXPECT_EQ(st.st_mode & 0777, 0644u);
  EXPECT_EQ(fx.read("m.prom"), "reclaimd_up 1\n");
  // No temporary is left behind (only the planted names and the file).
  std::size_t entries = 0;
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator(fx.root()))
    ++entries;
  EXPECT_EQ(entries, 4u);
}

// A removed metrics directory stays removed, a write every 10 s failing: one line a minute with the
// failures since the last, one line when a write works again, and a new outage said at once.
TEST(MetricsFile, FailuresAreSaidOnceAMinuteAndTheRecoveryOnce) {
  Fixture fx;
  fx.mkdir("textfile");
  Endpoints endpoints;
  EndpointOptions options;
  options.statusSocket = "";
  options.metricsFile = fx.path("textfile/reclaimd.prom");
  ASSERT_TRUE(endpoints.open(options).ok());
  const auto metrics = [] { return std::string("reclaimd_up 1\n"); };
  const TimePoint t0{};
  CapturedLog log;
  endpoints.writeMetricsFile(metrics, t0);
  std::filesystem::remove_all(fx.path("textfile"));
  for (int i = 1; i <= 7; ++i)
    endpoints.writeMetricsFile(metrics, t0 + i * 10s);
  EXPECT_EQ(log.count("event=metrics_file_failed"), 2) << log.text();
  EXPECT_EQ(log.count("event=metrics_file_failed path=" + options.metricsFile), 2) << log.text();
  EXPECT_EQ(log.count(" failed=6"), 1) << "the six since the first line\n" << log.text();
  fx.mkdir("textfile");
  endpoints.writeMetricsFile(metrics, t0 + 80s);
  endpoints.writeMetricsFile(metrics, t0 + 90s);
  EXPECT_EQ(log.count("event=metrics_file_restored path=" + options.metricsFile + " failed=7"), 1) << log.text();
  EXPECT_EQ(fx.read("textfile/reclaimd.prom"), "reclaimd_up 1\n");
  std::filesystem::remove_all(fx.path("textfile"));
  endpoints.writeMetricsFile(metrics, t0 + 100s);
  EXPECT_EQ(log.count("event=metrics_file_failed"), 3) << log.text();
}

// The metrics file's path is the operator's text and may hold anything: escaped as every event's values
// are, it can neither end the line nor close a quote, whether a write fails or the last one at stop.
TEST(MetricsFile, AFailingPathIsSaidOnOneEscapedLine) {
  Fixture fx;
  Endpoints endpoints;
  EndpointOptions options;
  options.statusSocket = "";
  options.metricsFile = fx.path("no\"such\nevent=forged dir/reclaimd.prom");
  ASSERT_TRUE(endpoints.open(options).ok());
  CapturedLog log;
  endpoints.writeMetricsFile([] { return std::string("reclaimd_up 1\n"); }, TimePoint{});
  std::string text = log.text();
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 1) << text;
  EXPECT_EQ(text.rfind("event=metrics_file_failed path=" + escapeValue(options.metricsFile) + " error=\"", 0), 0u)
      << text;
  endpoints.stop();
  text = log.text();
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 2) << text;
  EXPECT_EQ(log.count("event=metrics_file_failed path=" + escapeValue(options.metricsFile) + " error=\""), 2) << text;
}

TEST(MetricsFile, StoppedSaysUpZero) {
  EXPECT_EQ(controller::markStopped("# TYPE reclaimd_up gauge\nreclaimd_up 1\nx 1\n"),
            "# TYPE reclaimd_up gauge\nreclaimd_up 0\nx 1\n");
}

}  // namespace
}  // namespace reclaimd::testing

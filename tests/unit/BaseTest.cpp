// Sizes and durations parsed and printed, KeptFile re-reads, the pressure parser, and the
// watchdog's environment.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "base/Files.h"
#include "base/Quantities.h"
#include "base/Systemd.h"
#include "psi/Pressure.h"
#include "tests/unit/Fixture.h"

namespace reclaimd {
namespace {

using namespace std::chrono_literals;

TEST(Quantities, Bytes) {
  EXPECT_EQ(parseBytes("0"), 0u);
  EXPECT_EQ(parseBytes("134217728"), 134217728u);
  EXPECT_EQ(parseBytes("128M"), 128 * kMiB);
  EXPECT_EQ(parseBytes("128Mi"), 128 * kMiB);
  EXPECT_EQ(parseBytes("128MiB"), 128 * kMiB);
  EXPECT_EQ(parseBytes("128MB"), 128 * kMiB);
  EXPECT_EQ(parseBytes("1G"), kGiB);
  EXPECT_EQ(parseBytes("4k"), 4 * kKiB);
  EXPECT_EQ(parseBytes("2T"), 2048 * kGiB);
  EXPECT_EQ(parseBytes("17B"), 17u);
  for (const char* bad : {"", "M", "-1", "1.5G", "12 M", "1X", "1MiBs", "1Bi", "99999999999999999999G"}) {
    EXPECT_FALSE(parseBytes(bad).has_value()) << bad;
  }
}

TEST(Quantities, Durations) {
  EXPECT_EQ(parseDuration("500ms"), 500ms);
  EXPECT_EQ(parseDuration("30s"), 30s);
  EXPECT_EQ(parseDuration("120"), 120s);
  EXPECT_EQ(parseDuration("2m"), 120s);
  EXPECT_EQ(parseDuration("1h"), 3600s);
  for (const char* bad : {"", "s", "2 m", "1.5s", "-1s", "10d", "99999999999h"}) {
    EXPECT_FALSE(parseDuration(bad).has_value()) << bad;
  }
}

TEST(Quantities, Printing) {
  EXPECT_EQ(formatBytes(128 * kMiB), "128MiB");
  EXPECT_EQ(formatBytes(kGiB), "1GiB");
  EXPECT_EQ(formatBytes(1536 * kKiB), "1536KiB") << "exact in some unit: printed exactly";
  EXPECT_EQ(formatBytes(1536 * kKiB + 1), "1.5MiB");
  EXPECT_EQ(formatBytes(17), "17B");
  EXPECT_EQ(formatMiB(256 * kMiB), "256.0");
  EXPECT_EQ(formatMiBSigned(-static_cast<std::int64_t>(kMiB)), "-1.0");
  EXPECT_EQ(formatDuration(120s), "120s");
  EXPECT_EQ(formatDuration(1500ms), "1.5s");
  EXPECT_EQ(formatDuration(250ms), "250ms");
  EXPECT_EQ(formatDuration(471341ms), "471.341s") << "exact, never a rounded value that reads as another";
  EXPECT_EQ(formatDuration(99999ms), "99.999s");
}

TEST(KeptFile, RereadsNewContentAndGrows) {
  testing::Fixture fx;
  fx.write("f", "short\n");
  auto f = KeptFile::open(AT_FDCWD, fx.path("f"));
  ASSERT_TRUE(f.ok());
  auto first = f->read();
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(*first, "short\n");
  const std::string big(20000, 'x');
  fx.write("f", big);  // truncates and rewrites the same inode
  auto second = f->read();
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(second->size(), big.size());
}

TEST(KeptFile, ErrorsCarryThePath) {
  testing::Fixture fx;
  auto f = KeptFile::open(AT_FDCWD, fx.path("missing"));
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.error().errnoValue(), ENOENT);
  EXPECT_NE(f.error().message().find("missing"), std::string::npos);
}

TEST(Files, RefusesUnboundedFiles) {
  testing::Fixture fx;
  fx.write("huge", std::string(kMaxKernelFileBytes + 10, 'y'));
  auto r = readFileAt(AT_FDCWD, fx.path("huge"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().errnoValue(), EFBIG);
}

TEST(Pressure, ParsesSomeAndFull) {
  auto p = psi::parsePressure(
      "some avg10=1.50 avg60=0.25 avg300=0.00 total=123456\nfull avg10=0.10 avg60=0.00 avg300=0.00 total=999\n");
  ASSERT_TRUE(p.ok()) << p.error().message();
  EXPECT_DOUBLE_EQ(p->some.avg10, 1.5);
  EXPECT_EQ(p->some.totalUsec, 123456u);
  ASSERT_TRUE(p->full.has_value());
  EXPECT_EQ(p->full->totalUsec, 999u);
}

TEST(Pressure, CpuFileWithoutFullLine) {
  auto p = psi::parsePressure("some avg10=0.00 avg60=0.00 avg300=0.00 total=0\n");
  ASSERT_TRUE(p.ok());
  EXPECT_FALSE(p->full.has_value());
}

TEST(Pressure, TotalPastMicrosecondsIsAnError) {
  // 2^64-1 us cannot become std::chrono::microseconds (a signed count): refused, not wrapped.
  auto p = psi::parsePressure("some avg10=0.00 avg60=0.00 avg300=0.00 total=18446744073709551615\n");
  ASSERT_FALSE(p.ok()) << "total " << p->some.totalUsec;
  EXPECT_EQ(p.error().errnoValue(), EOVERFLOW);
  auto edge = psi::parsePressure("some avg10=0.00 avg60=0.00 avg300=0.00 total=9223372036854775807\n");
  ASSERT_TRUE(edge.ok());
  EXPECT_EQ(edge->some.totalUsec, 9223372036854775807u);
}

TEST(Pressure, MalformedIsAnError) {
  for (const char* bad : {"", "some avg10=x avg60=0 avg300=0 total=0\n", "some avg10=0 avg60=0 avg300=0\n",
                          "some avg10=0 avg60=0 avg300=0 total=-1\n", "other avg10=0 avg60=0 avg300=0 total=0\n",
                          "full avg10=0 avg60=0 avg300=0 total=0\n", "some avg10=0.00 avg60"}) {
    EXPECT_FALSE(psi::parsePressure(bad).ok()) << bad;
  }
}

TEST(Pressure, NonFiniteAveragesAreAnError) {
  // from_chars reads these; the kernel never writes them ("%lu.%02lu"), and a NaN average fails
  // every comparison silently.
  for (const char* avg : {"nan", "NAN", "inf", "-inf", "infinity", "-nan"}) {
    for (const char* key : {"avg10", "avg60", "avg300"}) {
      std::string line = "some avg10=0.00 avg60=0.00 avg300=0.00 total=0\n";
      const std::size_t at = line.find(std::string(key) + "=") + std::string(key).size() + 1;
      line.replace(at, 4, avg);
      auto p = psi::parsePressure(line);
      EXPECT_FALSE(p.ok()) << line;
      if (p.ok()) continue;
      EXPECT_NE(p.error().message().find(std::string("malformed ") + key), std::string::npos) << p.error().message();
    }
  }
}

// The environment systemd sets for the watchdog: a number, or a message naming what is wrong.
TEST(Watchdog, Environment) {
  ::unsetenv("WATCHDOG_PID");
  ::setenv("WATCHDOG_USEC", "30000000", 1);
  auto set = sdWatchdog();
  ASSERT_TRUE(set.ok()) << set.error().message();
  EXPECT_EQ(*set, std::chrono::microseconds(30s));
  ::setenv("WATCHDOG_PID", std::to_string(::getpid() + 1).c_str(), 1);
  auto other = sdWatchdog();
  ASSERT_TRUE(other.ok()) << other.error().message();
  EXPECT_FALSE(other->has_value()) << "meant for another process";
  ::setenv("WATCHDOG_PID", "12x", 1);
  auto badPid = sdWatchdog();
  ASSERT_FALSE(badPid.ok());
  EXPECT_EQ(badPid.error().message(), "WATCHDOG_PID=12x: not a decimal number");
  ::unsetenv("WATCHDOG_PID");
  ::setenv("WATCHDOG_USEC", "30s", 1);
  auto bad = sdWatchdog();
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message(), "WATCHDOG_USEC=30s: not a decimal number");
  ::unsetenv("WATCHDOG_USEC");
  auto none = sdWatchdog();
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());
}

}  // namespace
}  // namespace reclaimd

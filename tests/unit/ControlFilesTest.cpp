// Control files are opened only when they are regular files (no symlink followed, no FIFO
// waited on), and a tracked cgroup keeps two fds.
#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include "base/Files.h"
#include "cgroup/Cgroup.h"
#include "cgroup/ControlFiles.h"
#include "cgroup/Reclaim.h"
#include "psi/Trigger.h"
#include "tests/unit/Fixture.h"

namespace reclaimd {
namespace {

bool refused(const Error& e) {
  return e.code == Errc::Refused;
}

// A FIFO with its own read and write end held open by the test, so that a plain open of it
// would not block but succeed: a reader that opened it plainly fails the test instead of hanging.
class Fifo {
 public:
  explicit Fifo(const std::string& path) {
    EXPECT_EQ(::mkfifo(path.c_str(), 0600), 0);
    held_ = UniqueFd(::open(path.c_str(), O_RDWR | O_NONBLOCK | O_CLOEXEC));
    EXPECT_TRUE(held_.valid());
  }

 private:
  UniqueFd held_;
};

TEST(OpenRegular, RefusesASymlinkedControlFile) {
  testing::Fixture fx;
  fx.write("cg/a/memory.stat", "active_file 0\ninactive_file 0\n");
  fx.write("outside/victim", "precious\n");
  std::filesystem::create_symlink(fx.path("outside/victim"), fx.path("cg/a/memory.reclaim"));
  UniqueFd dir(::open(fx.path("cg/a").c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  auto file = cgroup::ReclaimFile::open(dir.get(), "a");
  ASSERT_FALSE(file.ok()) << "a symlinked memory.reclaim must not be opened";
  EXPECT_TRUE(refused(file.error())) << file.error().message();
  EXPECT_FALSE(cgroup::cgroupGone(file.error())) << "refused is not gone";
  EXPECT_NE(file.error().message().find("a/memory.reclaim"), std::string::npos) << file.error().message();
  EXPECT_NE(file.error().message().find("symlink"), std::string::npos) << file.error().message();
  EXPECT_EQ(fx.read("outside/victim"), "precious\n");
  // The same through the cgroup's own opener.
  UniqueFd root(::open(fx.path("cg").c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  auto cg = cgroup::Cgroup::open(root.get(), "a");
  ASSERT_TRUE(cg.ok());
  auto step = cg->openReclaim();
  ASSERT_FALSE(step.ok());
  EXPECT_TRUE(refused(step.error()));
}

TEST(OpenRegular, RefusesFifosInsteadOfBlocking) {
  testing::Fixture fx;
  fx.mkdir("cg");
  Fifo stat(fx.path("cg/memory.stat"));
  Fifo reclaim(fx.path("cg/memory.reclaim"));
  Fifo dropCaches(fx.path("drop_caches"));
  Fifo policy(fx.path("policy.yaml"));
  UniqueFd root(::open(fx.path("cg").c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  auto cg = cgroup::Cgroup::open(root.get(), "");
  ASSERT_TRUE(cg.ok());
  auto s = cg->memoryStat();
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(refused(s.error())) << s.error().message();
  EXPECT_NE(s.error().message().find("FIFO"), std::string::npos) << s.error().message();
  auto r = cg->openReclaim();
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(refused(r.error())) << r.error().message();
  auto w = writeFileAt(AT_FDCWD, fx.path("drop_caches"), "3");
  ASSERT_FALSE(w.ok());
  EXPECT_TRUE(refused(w.error())) << w.error().message();
  auto p = readFileAt(AT_FDCWD, fx.path("policy.yaml"));
  ASSERT_FALSE(p.ok());
  EXPECT_TRUE(refused(p.error())) << p.error().message();
  auto t = psi::Trigger::open(AT_FDCWD, fx.path("cg/memory.stat"), psi::TriggerSpec{});
  ASSERT_FALSE(t.ok());
  EXPECT_TRUE(refused(t.error())) << t.error().message();
}

TEST(OpenRegular, RefusesAFifoWithNoReader) {
  testing::Fixture fx;
  ASSERT_EQ(::mkfifo(fx.path("memory.reclaim").c_str(), 0600), 0);
  // Nobody holds the FIFO: O_WRONLY|O_NONBLOCK fails with ENXIO, reported as refused.
  auto w = writeFileAt(AT_FDCWD, fx.path("memory.reclaim"), "0");
  ASSERT_FALSE(w.ok());
  EXPECT_TRUE(refused(w.error())) << w.error().message();
}

TEST(OpenRegular, KeepsTheCallersBlockingMode) {
  testing::Fixture fx;
  fx.write("f", "x\n");
  auto blocking = openRegular(AT_FDCWD, fx.path("f"), O_RDONLY);
  ASSERT_TRUE(blocking.ok());
  EXPECT_EQ(::fcntl(blocking->get(), F_GETFL) & O_NONBLOCK, 0) << "O_NONBLOCK only guards the open";
  EXPECT_NE(::fcntl(blocking->get(), F_GETFD) & FD_CLOEXEC, 0);
  auto nonblocking = openRegular(AT_FDCWD, fx.path("f"), O_RDONLY | O_NONBLOCK);
  ASSERT_TRUE(nonblocking.ok());
  EXPECT_NE(::fcntl(nonblocking->get(), F_GETFL) & O_NONBLOCK, 0) << "asked for: kept";
  auto missing = openRegular(AT_FDCWD, fx.path("missing"), O_RDONLY);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().errnoValue(), ENOENT) << "gone stays gone";
  auto directory = openRegular(AT_FDCWD, fx.path(""), O_RDONLY);
  ASSERT_FALSE(directory.ok());
  EXPECT_TRUE(refused(directory.error()));
}

TEST(OpenRegular, SymlinksBeforeTheLastComponentAreFine) {
  // /proc/self is a symlink: O_NOFOLLOW covers the last component only.
  auto self = readFileAt(AT_FDCWD, "/proc/self/stat");
  ASSERT_TRUE(self.ok()) << self.error().message();
  testing::Fixture fx;
  fx.write("real/policy.yaml", "mode: gradual\n");
  std::filesystem::create_symlink(fx.path("real/policy.yaml"), fx.path("link.yaml"));
  EXPECT_FALSE(readFileAt(AT_FDCWD, fx.path("link.yaml")).ok());
  auto followed = readFileAt(AT_FDCWD, fx.path("link.yaml"), LastSymlink::Follow);
  ASSERT_TRUE(followed.ok()) << "a caller may follow the last link when it chooses to";
  EXPECT_EQ(*followed, "mode: gradual\n");
}

int openFds() {
  int n = 0;
  DIR* d = ::opendir("/proc/self/fd");
  if (d == nullptr) return -1;
  while (::readdir(d) != nullptr)
    ++n;
  ::closedir(d);
  return n;
}

TEST(Cgroup, KeepsTwoFdsPerTarget) {
  testing::Fixture fx;
  fx.write("cg/a/memory.stat", "active_file 4096\ninactive_file 0\n");
  fx.write("cg/a/memory.reclaim", "");
  fx.write("cg/a/cpu.stat", "usage_usec 5\n");
  UniqueFd root(::open(fx.path("cg").c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  const int before = openFds();
  auto cg = cgroup::Cgroup::open(root.get(), "a");
  ASSERT_TRUE(cg.ok());
  ASSERT_TRUE(cg->memoryStat().ok());
  {
    auto step = cg->openReclaim();
    ASSERT_TRUE(step.ok()) << step.error().message();
    EXPECT_EQ(step->write(4096, cgroup::ReclaimFormat::Plain).status(), cgroup::ReclaimStatus::Done);
    EXPECT_EQ(openFds(), before + 3) << "memory.reclaim is open during the step";
  }
  EXPECT_EQ(openFds(), before + 2) << "directory and memory.stat, nothing else, between steps";
  EXPECT_EQ(fx.read("cg/a/memory.reclaim"), "4096");
  ASSERT_TRUE(cg->cpuStat().ok());
  EXPECT_EQ(openFds(), before + 3) << "cpu.stat once a target asks for it";
}

}  // namespace
}  // namespace reclaimd

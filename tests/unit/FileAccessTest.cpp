// File access from fanotify: the event parser on records as the kernel writes them and on
// records cut or corrupted, the choice of filesystems from mount tables, and a real group on
// this machine's filesystem (a file read shows once an epoch).
#include <errno.h>
#include <fcntl.h>
#include <sys/fanotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <optional>
#include <vector>

#include "access/Events.h"
#include "access/Filesystems.h"
#include "access/Watch.h"
#include "tests/unit/FanotifyRecords.h"
#include "tests/unit/Fixture.h"

namespace reclaimd::access {
namespace {

std::vector<std::byte> fidEvent(std::uint64_t mask, std::int32_t pid, std::uint64_t fsid, std::int32_t type,
                                const std::string& handle) {
  return testing::fidRecord(FileAccess{FileId{fsid, type, handle}, pid, mask});
}

std::vector<std::byte> overflowEvent() {
  fanotify_event_metadata meta{};
  meta.event_len = sizeof meta;
  meta.vers = FANOTIFY_METADATA_VERSION;
  meta.metadata_len = sizeof meta;
  meta.mask = FAN_Q_OVERFLOW;
  meta.fd = FAN_NOFD;
  std::vector<std::byte> out(sizeof meta);
  std::memcpy(out.data(), &meta, sizeof meta);
  return out;
}

std::vector<std::byte> concat(std::initializer_list<std::vector<std::byte>> parts) {
  std::vector<std::byte> out;
  for (const auto& p : parts)
    out.insert(out.end(), p.begin(), p.end());
  return out;
}

Drained parsed(const std::vector<std::byte>& buffer) {
  Drained out;
  parseEvents(buffer, out);
  return out;
}

TEST(FileAccessEvents, ReadsEachFileItsProcessAndWhatHappened) {
  const auto d = parsed(concat({fidEvent(FAN_ACCESS, 42, 0x1234, 1, std::string("\x01\x02\x03\x04\x05\x06\x07\x08", 8)),
                                fidEvent(FAN_OPEN | FAN_MODIFY, 7, 0x99, 129, "abcdefghijkl")}));
  ASSERT_EQ(d.accesses.size(), 2u);
  EXPECT_EQ(d.malformed, 0u);
  EXPECT_FALSE(d.overflow);
  EXPECT_EQ(d.accesses[0].pid, 42);
  EXPECT_EQ(d.accesses[0].mask, FAN_ACCESS);
  EXPECT_EQ(d.accesses[0].file.fsid, 0x1234u);
  EXPECT_EQ(d.accesses[0].file.handleType, 1);
  EXPECT_EQ(d.accesses[0].file.handle.size(), 8u);
  EXPECT_EQ(d.accesses[1].file.handle, "abcdefghijkl");
  EXPECT_EQ(d.accesses[1].mask, FAN_OPEN | FAN_MODIFY);
  EXPECT_FALSE(d.accesses[0].file == d.accesses[1].file);
  const auto same = parsed(fidEvent(FAN_OPEN, 1, 0x99, 129, "abcdefghijkl"));
  EXPECT_EQ(FileIdHash{}(d.accesses[1].file), FileIdHash{}(same.accesses[0].file));
}

TEST(FileAccessEvents, AnOverflowSaysAccessesWereLost) {
  const auto d = parsed(concat({overflowEvent(), fidEvent(FAN_ACCESS, 1, 1, 1, "handle")}));
  EXPECT_TRUE(d.overflow);
  ASSERT_EQ(d.accesses.size(), 1u);
}

TEST(FileAccessEvents, ACutBufferKeepsWhatWasWhole) {
  const auto whole = fidEvent(FAN_ACCESS, 1, 1, 1, "handle");
  auto buffer = concat({whole, whole});
  buffer.resize(buffer.size() - 3);
  const auto d = parsed(buffer);
  EXPECT_EQ(d.accesses.size(), 1u);
  EXPECT_EQ(d.malformed, 1u);
}

TEST(FileAccessEvents, LengthsThatDoNotHoldAreSkippedNotTrusted) {
  // A handle longer than its record.
  auto longHandle = fidEvent(FAN_ACCESS, 1, 1, 1, "handle");
  const std::uint32_t huge = 4096;
  std::memcpy(longHandle.data() + sizeof(fanotify_event_metadata) + 12, &huge, 4);
  // An info header longer than the event.
  auto longInfo = fidEvent(FAN_ACCESS, 1, 1, 1, "handle");
  longInfo[sizeof(fanotify_event_metadata) + 2] = std::byte{200};
  // Another metadata version.
  auto version = fidEvent(FAN_ACCESS, 1, 1, 1, "handle");
  version[4] = std::byte{FANOTIFY_METADATA_VERSION + 1};
  const auto good = fidEvent(FAN_ACCESS, 5, 1, 1, "handle");
  const auto d = parsed(concat({longHandle, longInfo, version, good}));
  EXPECT_EQ(d.malformed, 3u);
  ASSERT_EQ(d.accesses.size(), 1u);
  EXPECT_EQ(d.accesses[0].pid, 5);

  // An event length shorter than the metadata ends the buffer.
  auto shortLen = good;
  const std::uint32_t tiny = 8;
  std::memcpy(shortLen.data(), &tiny, 4);
  const auto e = parsed(concat({shortLen, good}));
  EXPECT_TRUE(e.accesses.empty());
  EXPECT_EQ(e.malformed, 1u);
}

TEST(FileAccessFilesystems, BlockDevicesOnceEachAndNothingElse) {
  auto mounts = cgroup::parseMountinfo(
      "22 1 254:0 / / rw,relatime - ext4 /dev/vda1 rw\n"
      "23 22 0:5 / /dev rw - devtmpfs udev rw\n"
      "24 22 0:22 / /run rw - tmpfs tmpfs rw\n"
      "25 22 0:20 / /proc rw - proc proc rw\n"
      "26 22 254:0 /srv /srv rw - ext4 /dev/vda1 rw\n"
      "27 22 259:3 / /data rw - xfs /dev/nvme0n1p3 rw\n"
      "28 22 7:1 / /snap/core/1 ro - squashfs /dev/loop1 ro\n"
      "29 22 0:50 / /mnt/c rw - 9p drvfs rw\n"
      "30 22 0:51 / /home/u/net rw - fuse.sshfs u@h: rw\n"
      "31 22 0:52 / /var/lib/docker/overlay2/x/merged rw - overlay overlay rw\n");
  ASSERT_TRUE(mounts.ok());
  const auto fs = filesystemsToWatch(*mounts);
  ASSERT_EQ(fs.size(), 3u);
  EXPECT_EQ(fs[0].mountPoint, "/");
  EXPECT_EQ(fs[0].device, "254:0");
  EXPECT_EQ(fs[1].mountPoint, "/data");
  EXPECT_EQ(fs[1].fsType, "xfs");
  EXPECT_EQ(fs[2].mountPoint, "/snap/core/1");
}

// A real group on the filesystem of the test's own directory: needs CAP_SYS_ADMIN and a
// filesystem that names files by handle (ext4 and xfs do). Where either is missing the test says
// so as a skip, with the reason; the real-kernel tests cover the daemon's use of it.
class FileAccessWatch : public ::testing::Test {
 protected:
  void SetUp() override {
    auto w = Watch::open();
    if (!w) {
      GTEST_SKIP() << "no fanotify group here: " << w.error().message();
    }
    if (auto marked = w->watch(fx.root().string()); !marked) {
      GTEST_SKIP() << marked.error().message();
    }
    watch.emplace(std::move(*w));
    fx.write("hot", std::string(8192, 'h'));
    drain();  // the write's own events
  }

  void read(const std::string& name) {
    std::ifstream in(fx.path(name));
    std::string text((std::istreambuf_iterator<char>(in)), {});
    ASSERT_FALSE(text.empty());
  }

  // This process's events about the file `name` (the filesystem is shared with the machine).
  std::vector<FileAccess> drain(const std::string& name = {}) {
    std::vector<FileAccess> mine;
    // Everything that waits: the filesystem is the machine's, and other processes' events
    // (a parallel build's, other tests') can queue ahead of this one's.
    auto d = watch->drain(std::size_t{64} << 20);
    EXPECT_TRUE(d.ok()) << (d ? "" : d.error().message());
    if (!d) return mine;
    EXPECT_FALSE(d->overflow) << "the kernel's queue overflowed: this test's events may be lost";
    struct stat want {};
    if (!name.empty()) {
      EXPECT_EQ(::stat(fx.path(name).c_str(), &want), 0);
    }
    for (auto& a : d->accesses) {
      if (a.pid != ::getpid() || name.empty()) continue;
      auto fd = watch->openFile(a.file, O_PATH);
      struct stat got {};
      if (fd && ::fstat(fd->get(), &got) == 0 && got.st_ino == want.st_ino) mine.push_back(a);
    }
    return mine;
  }

  testing::Fixture fx;
  std::optional<Watch> watch;
};

TEST_F(FileAccessWatch, AReadShowsAndOpensBackByHandle) {
  read("hot");
  const auto seen = drain("hot");
  ASSERT_FALSE(seen.empty());
  std::uint64_t mask = 0;
  for (const auto& a : seen)
    mask |= a.mask;
  EXPECT_TRUE(mask & FAN_OPEN);
  EXPECT_TRUE(mask & FAN_ACCESS);
  auto fd = watch->openFile(seen.front().file, O_RDONLY);
  ASSERT_TRUE(fd.ok()) << fd.error().message();
  char c = 0;
  EXPECT_EQ(::read(fd->get(), &c, 1), 1);
  EXPECT_EQ(c, 'h');
}

TEST_F(FileAccessWatch, AQuietFileShowsAgainOnlyInTheNextEpoch) {
  read("hot");
  const auto seen = drain("hot");
  ASSERT_FALSE(seen.empty());
  ASSERT_TRUE(watch->quiet(seen.front().file).ok());
  read("hot");
  EXPECT_TRUE(drain("hot").empty()) << "a quiet file showed within its epoch";
  // Another file still shows.
  fx.write("other", "o");
  drain();
  read("other");
  EXPECT_FALSE(drain("other").empty());
  ASSERT_TRUE(watch->newEpoch().ok());
  read("hot");
  EXPECT_FALSE(drain("hot").empty()) << "the file did not show in the new epoch";
}

TEST_F(FileAccessWatch, ADeletedFileNoLongerOpens) {
  read("hot");
  const auto seen = drain("hot");
  ASSERT_FALSE(seen.empty());
  fx.remove("hot");
  auto fd = watch->openFile(seen.front().file, O_RDONLY);
  ASSERT_FALSE(fd.ok());
  EXPECT_EQ(fd.error().errnoValue(), ESTALE) << fd.error().message();
  EXPECT_FALSE(watch->quiet(seen.front().file).ok());
}

TEST(FileAccessWatchErrors, AFileOfAnUnwatchedFilesystemDoesNotOpen) {
  auto w = Watch::open();
  if (!w) {
    GTEST_SKIP() << "no fanotify group here: " << w.error().message();
  }
  auto fd = w->openFile(FileId{1, 1, "handle"}, O_RDONLY);
  ASSERT_FALSE(fd.ok());
  EXPECT_NE(fd.error().message().find("not watched"), std::string::npos) << fd.error().message();
}

}  // namespace
}  // namespace reclaimd::access

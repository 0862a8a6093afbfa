// A fresh temporary directory tree per test (oomd's Fixture idea): write kernel-like files,
// point reclaimd's roots at it, and it is removed when the test ends.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

namespace reclaimd::testing {

class Fixture {
 public:
  Fixture();
  ~Fixture();
  Fixture(const Fixture&) = delete;
  Fixture& operator=(const Fixture&) = delete;

  const std::filesystem::path& root() const { return root_; }
  std::string path(std::string_view relative) const { return (root_ / relative).string(); }

  // Writes `content` to root/relative, creating parent directories.
  void write(std::string_view relative, std::string_view content) const;
  std::string read(std::string_view relative) const;
  void mkdir(std::string_view relative) const;
  void remove(std::string_view relative) const;

 private:
  std::filesystem::path root_;
};

// A /proc/stat whose aggregate line has these tick counts (the rest of the file as a kernel
// prints it, so parsers see realistic trailing lines).
std::string procStat(unsigned long long user, unsigned long long system, unsigned long long idle);

// A /proc/meminfo with the given sizes in MiB (other fields realistic).
std::string meminfo(unsigned long long totalMiB, unsigned long long freeMiB, unsigned long long activeFileMiB,
                    unsigned long long inactiveFileMiB, unsigned long long sReclaimableMiB,
                    unsigned long long swapTotalMiB = 0);

// Whether `message` refuses `file` as YAML that makes the reader run away: by either of the
// bounded child's limits, CPU (or the wall clock) and memory. Which one a runaway meets first
// depends on the machine (a fast allocator fills 1 GiB within 2 s of CPU), so a test of the
// guard accepts both.
bool refusedAsRunaway(const std::string& message, const std::string& file);

// fuzz_policy's find: yaml-cpp 0.7 loops forever on these 8 bytes, allocating. The daemon and
// check-config first read a policy's YAML in a fresh, bounded process (policies/Guard.h).
inline constexpr const char* kRunawayYaml = ",a-\n  b\n";

}  // namespace reclaimd::testing

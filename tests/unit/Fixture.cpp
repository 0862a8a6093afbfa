#include "tests/unit/Fixture.h"

#include <stdlib.h>

#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string_view>

namespace reclaimd::testing {

Fixture::Fixture() {
  std::string tmpl = (std::filesystem::temp_directory_path() / "reclaimd-test-XXXXXX").string();
  if (::mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
  root_ = tmpl;
}

Fixture::~Fixture() {
  std::error_code ignored;
  std::filesystem::remove_all(root_, ignored);
}

void Fixture::write(std::string_view relative, std::string_view content) const {
  const auto file = root_ / relative;
  std::filesystem::create_directories(file.parent_path());
  std::ofstream out(file, std::ios::binary | std::ios::trunc);
  out << content;
  if (!out) throw std::runtime_error("cannot write " + file.string());
}

std::string Fixture::read(std::string_view relative) const {
  std::ifstream in(root_ / relative, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void Fixture::mkdir(std::string_view relative) const {
  std::filesystem::create_directories(root_ / relative);
}

void Fixture::remove(std::string_view relative) const {
  std::filesystem::remove_all(root_ / relative);
}

std::string procStat(unsigned long long user, unsigned long long system, unsigned long long idle) {
  std::ostringstream s;
  s << "cpu  " << user << " 0 " << system << " " << idle << " 0 0 0 0 0 0\n"
    << "cpu0 " << user << " 0 " << system << " " << idle << " 0 0 0 0 0 0\n"
    << "intr 1234 0 9 0 0 0 0 0 0 1 0 0 0 156 0 0 0\n"
    << "ctxt 98765\nbtime 1700000000\nprocesses 4242\nprocs_running 1\nprocs_blocked 0\n"
    << "softirq 5555 0 1000 0 200 0 0 300 2000 0 2055\n";
  return s.str();
}

std::string meminfo(unsigned long long totalMiB, unsigned long long freeMiB, unsigned long long activeFileMiB,
                    unsigned long long inactiveFileMiB, unsigned long long sReclaimableMiB,
                    unsigned long long swapTotalMiB) {
  std::ostringstream s;
  auto kb = [](unsigned long long mib) { return mib * 1024; };
  s << "MemTotal:       " << kb(totalMiB) << " kB\n"
    << "MemFree:        " << kb(freeMiB) << " kB\n"
    << "MemAvailable:   " << kb(freeMiB + activeFileMiB + inactiveFileMiB) << " kB\n"
    << "Buffers:           10240 kB\n"
    << "Cached:         " << kb(activeFileMiB + inactiveFileMiB) << " kB\n"
    << "SwapCached:            0 kB\n"
    << "Active:         " << kb(activeFileMiB + 100) << " kB\n"
    << "Inactive:       " << kb(inactiveFileMiB + 50) << " kB\n"
    << "Active(anon):     102400 kB\n"
    << "Inactive(anon):    51200 kB\n"
    << "Active(file):   " << kb(activeFileMiB) << " kB\n"
    << "Inactive(file): " << kb(inactiveFileMiB) << " kB\n"
    << "Unevictable:           0 kB\n"
    << "Mlocked:               0 kB\n"
    << "SwapTotal:      " << kb(swapTotalMiB) << " kB\n"
    << "SwapFree:       " << kb(swapTotalMiB) << " kB\n"
    << "Dirty:                 8 kB\n"
    << "Shmem:              2048 kB\n"
    << "KReclaimable:   " << kb(sReclaimableMiB) << " kB\n"
    << "Slab:           " << kb(sReclaimableMiB + 20) << " kB\n"
    << "SReclaimable:   " << kb(sReclaimableMiB) << " kB\n"
    << "SUnreclaim:        20480 kB\n"
    << "HugePages_Total:       0\n"
    << "Hugepagesize:       2048 kB\n";
  return s.str();
}

bool refusedAsRunaway(const std::string& message, const std::string& file) {
  const std::string reader = file + ": the YAML reader ";
  const auto at = message.find(reader);
  if (at == std::string::npos || message.find("the file is refused") == std::string::npos) return false;
  const std::string_view why = std::string_view(message).substr(at + reader.size());
  return why.starts_with("did not finish within") || why.starts_with("needed more than");
}

}  // namespace reclaimd::testing

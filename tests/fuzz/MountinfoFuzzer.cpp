// /proc/self/mountinfo: parsed entries print back (escaped as the kernel escapes them) to the
// same entries, and the cgroup2 mount chosen is always a whole cgroup2 hierarchy.
#include <string>

#include "cgroup/Mountinfo.h"
#include "tests/fuzz/Check.h"

namespace {

// The kernel's mangle(): space, tab, newline and backslash as \ooo octal.
std::string escape(const std::string& field) {
  std::string out;
  for (char c : field) {
    if (c == ' ' || c == '\t' || c == '\n' || c == '\\') {
      const auto u = static_cast<unsigned char>(c);
      out += '\\';
      out += static_cast<char>('0' + (u >> 6));
      out += static_cast<char>('0' + ((u >> 3) & 7));
      out += static_cast<char>('0' + (u & 7));
    } else {
      out += c;
    }
  }
  return out;
}

std::string print(const std::vector<reclaimd::cgroup::MountEntry>& mounts) {
  // 36 35 98:0 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:9 - cgroup2 cgroup2 rw
  std::string out;
  for (const auto& m : mounts) {
    out += "1 2 0:1 " + escape(m.root) + " " + escape(m.mountPoint) + " rw - " + m.fsType;
    // A line that ended at the type has no source: print none, nor the options after it.
    if (!m.source.empty()) out += " " + escape(m.source) + " rw";
    out += "\n";
  }
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace reclaimd;
  auto mounts = cgroup::parseMountinfo(fuzz::asText(data, size));
  if (!mounts) return 0;
  if (auto found = cgroup::findCgroup2(*mounts)) {
    FUZZ_CHECK(found->fsType == "cgroup2" && found->root == "/", "the chosen mount is a whole cgroup2 hierarchy");
  }
  auto again = cgroup::parseMountinfo(print(*mounts));
  FUZZ_CHECK(again.ok(), "printed mountinfo parses");
  FUZZ_CHECK(again->size() == mounts->size(), "printed mountinfo has as many entries");
  for (std::size_t i = 0; i < mounts->size(); ++i) {
    const auto& a = (*mounts)[i];
    const auto& b = (*again)[i];
    FUZZ_CHECK(a.root == b.root && a.mountPoint == b.mountPoint && a.fsType == b.fsType && a.source == b.source,
               "printed mountinfo parses to the same entries");
  }
  return 0;
}

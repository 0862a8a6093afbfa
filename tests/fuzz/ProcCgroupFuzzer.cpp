// /proc/<pid>/cgroup: the v2 path found is relative (no leading '/'), one line, and prints
// back to itself.
#include <string>

#include "cgroup/Mountinfo.h"
#include "tests/fuzz/Check.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace reclaimd;
  auto path = cgroup::parseProcCgroup(fuzz::asText(data, size));
  if (!path) return 0;
  FUZZ_CHECK(path->find('\n') == std::string::npos, "the path is one line");
  // 0::/system.slice/x.service
  FUZZ_CHECK(cgroup::parseProcCgroup("0::/" + *path + "\n") == path, "a printed v2 line parses to the same path");
  return 0;
}

// A cgroup's memory.stat: what parses prints back, kernel style, to the same figures.
#include <fmt/format.h>

#include "cgroup/Stat.h"
#include "tests/fuzz/Check.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace reclaimd;
  auto s = cgroup::parseMemoryStat(fuzz::asText(data, size));
  if (!s) return 0;
  // active_file 104857600
  const std::string printed = fmt::format(
      "anon {}\nfile {}\nactive_file {}\ninactive_file {}\nshmem {}\nslab_reclaimable {}\nworkingset_refault_file {}\n"
      "workingset_activate_file {}\n",
      s->anon, s->file, s->activeFile, s->inactiveFile, s->shmem, s->slabReclaimable, s->workingsetRefaultFile,
      s->workingsetActivateFile);
  auto again = cgroup::parseMemoryStat(printed);
  FUZZ_CHECK(again.ok(), "a printed memory.stat parses");
  FUZZ_CHECK(again->anon == s->anon && again->file == s->file && again->activeFile == s->activeFile &&
                 again->inactiveFile == s->inactiveFile && again->shmem == s->shmem &&
                 again->slabReclaimable == s->slabReclaimable &&
                 again->workingsetRefaultFile == s->workingsetRefaultFile &&
                 again->workingsetActivateFile == s->workingsetActivateFile,
             "a printed memory.stat parses to the same figures");
  return 0;
}

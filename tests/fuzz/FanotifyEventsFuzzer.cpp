// What a fanotify group reporting file ids reads (access/Events.h): every event kept writes
// back, as the kernel lays it out, to the same event, and nothing is read past the buffer.
#include <sys/fanotify.h>

#include <cstring>
#include <vector>

#include "access/Events.h"
#include "tests/fuzz/Check.h"
#include "tests/unit/FanotifyRecords.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace reclaimd::access;
  // A copy of exactly `size` bytes, so ASan sees any read past the kernel's buffer.
  std::vector<std::byte> buffer(size);
  if (size > 0) std::memcpy(buffer.data(), data, size);
  Drained d;
  parseEvents(buffer, d);
  FUZZ_CHECK(d.accesses.size() * (sizeof(fanotify_event_metadata) + 20) <= size, "no more events than fit");
  for (const auto& a : d.accesses) {
    Drained again;
    parseEvents(reclaimd::testing::fidRecord(a), again);
    FUZZ_CHECK(again.accesses.size() == 1 && again.malformed == 0 && !again.overflow, "a kept event prints back whole");
    FUZZ_CHECK(again.accesses[0].file == a.file && again.accesses[0].pid == a.pid && again.accesses[0].mask == a.mask,
               "a kept event prints back to the same event");
  }
  return 0;
}

// What a fanotify group reporting file ids reads (access/Events.h): every event kept writes
// back, as the kernel lays it out, to the same event, and nothing is read past the buffer.
#include <sys/fanotify.h>

#include <cstring>
#include <vector>

#include "access/Events.h"
#include "tests/fuzz/Check.h"

namespace {

std::vector<std::byte> print(const reclaimd::access::FileAccess& a) {
  const std::size_t info = 4 + 8 + 8 + a.file.handle.size();
  fanotify_event_metadata meta{};
  meta.event_len = static_cast<std::uint32_t>(sizeof meta + info);
  meta.vers = FANOTIFY_METADATA_VERSION;
  meta.metadata_len = sizeof meta;
  meta.mask = a.mask;
  meta.fd = FAN_NOFD;
  meta.pid = a.pid;
  std::vector<std::byte> out(meta.event_len);
  std::memcpy(out.data(), &meta, sizeof meta);
  std::byte* at = out.data() + sizeof meta;
  const std::uint16_t len = static_cast<std::uint16_t>(info);
  const std::uint8_t type = FAN_EVENT_INFO_TYPE_FID;
  std::memcpy(at, &type, 1);
  std::memcpy(at + 2, &len, 2);
  std::memcpy(at + 4, &a.file.fsid, 8);
  const auto bytes = static_cast<std::uint32_t>(a.file.handle.size());
  std::memcpy(at + 12, &bytes, 4);
  std::memcpy(at + 16, &a.file.handleType, 4);
  std::memcpy(at + 20, a.file.handle.data(), a.file.handle.size());
  return out;
}

}  // namespace

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
    parseEvents(print(a), again);
    FUZZ_CHECK(again.accesses.size() == 1 && again.malformed == 0 && !again.overflow, "a kept event prints back whole");
    FUZZ_CHECK(again.accesses[0].file == a.file && again.accesses[0].pid == a.pid && again.accesses[0].mask == a.mask,
               "a kept event prints back to the same event");
  }
  return 0;
}

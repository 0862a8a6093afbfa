// fanotify events as the kernel lays them out for a group reporting file ids: the metadata, then
// a FID record (header, fsid, file_handle). Shared by the parser's unit tests and its fuzz target.
#pragma once

#include <sys/fanotify.h>

#include <cstring>
#include <vector>

#include "access/Events.h"

namespace reclaimd::testing {

inline std::vector<std::byte> fidRecord(const access::FileAccess& a) {
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
  const std::uint8_t type = FAN_EVENT_INFO_TYPE_FID;
  const auto len = static_cast<std::uint16_t>(info);
  std::memcpy(at, &type, 1);
  std::memcpy(at + 2, &len, 2);
  std::memcpy(at + 4, &a.file.fsid, 8);
  const auto bytes = static_cast<std::uint32_t>(a.file.handle.size());
  std::memcpy(at + 12, &bytes, 4);
  std::memcpy(at + 16, &a.file.handleType, 4);
  std::memcpy(at + 20, a.file.handle.data(), a.file.handle.size());
  return out;
}

}  // namespace reclaimd::testing

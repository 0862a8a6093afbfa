#include "access/Events.h"

#include <sys/fanotify.h>

#include <cstring>

namespace reclaimd::access {

namespace {

// The layouts read, as <linux/fanotify.h> has them; copied out with memcpy, since a buffer
// offset need not be aligned for the struct.
struct InfoHeader {
  std::uint8_t type;
  std::uint8_t pad;
  std::uint16_t len;
};
constexpr std::size_t kFidInfo = sizeof(InfoHeader) + 8;  // the header, then the 8-byte fsid
constexpr std::size_t kHandleHeader = 8;                  // handle_bytes (u32), handle_type (s32)

template <typename T>
T load(const std::byte* at) {
  T value;
  std::memcpy(&value, at, sizeof value);
  return value;
}

// The FID record of one event (info records start at `at`, `len` bytes); false when none is
// well-formed.
bool readFid(const std::byte* at, std::size_t len, FileId& id) {
  while (len >= sizeof(InfoHeader)) {
    const auto header = load<InfoHeader>(at);
    if (header.len < sizeof(InfoHeader) || header.len > len) return false;
    if (header.type == FAN_EVENT_INFO_TYPE_FID && header.len >= kFidInfo + kHandleHeader) {
      const std::byte* fsid = at + sizeof(InfoHeader);
      const auto bytes = load<std::uint32_t>(fsid + 8);
      if (bytes > header.len - kFidInfo - kHandleHeader) return false;
      id.fsid = load<std::uint64_t>(fsid);
      id.handleType = load<std::int32_t>(fsid + 12);
      id.handle.assign(reinterpret_cast<const char*>(fsid + 8 + kHandleHeader), bytes);
      return true;
    }
    at += header.len;
    len -= header.len;
  }
  return false;
}

}  // namespace

std::size_t FileIdHash::operator()(const FileId& id) const noexcept {
  std::size_t h = std::hash<std::string>{}(id.handle);
  h ^= std::hash<std::uint64_t>{}(id.fsid) + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
  return h ^ static_cast<std::size_t>(id.handleType);
}

void parseEvents(std::span<const std::byte> buffer, Drained& out) {
  const std::byte* at = buffer.data();
  std::size_t left = buffer.size();
  while (left >= sizeof(fanotify_event_metadata)) {
    const auto meta = load<fanotify_event_metadata>(at);
    // A record whose lengths do not hold ends the buffer: nothing after it can be placed.
    if (meta.event_len < sizeof meta || meta.event_len > left || meta.metadata_len < sizeof meta ||
        meta.metadata_len > meta.event_len) {
      ++out.malformed;
      return;
    }
    if (meta.vers != FANOTIFY_METADATA_VERSION) {
      ++out.malformed;
    } else if (meta.mask & FAN_Q_OVERFLOW) {
      out.overflow = true;
    } else {
      FileAccess access;
      access.pid = meta.pid;
      access.mask = meta.mask;
      if (readFid(at + meta.metadata_len, meta.event_len - meta.metadata_len, access.file))
        out.accesses.push_back(std::move(access));
      else
        ++out.malformed;
    }
    at += meta.event_len;
    left -= meta.event_len;
  }
  if (left > 0) ++out.malformed;
}

}  // namespace reclaimd::access

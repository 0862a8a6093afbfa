// What a fanotify group reporting file ids (FAN_REPORT_FID) reads: which file was opened, read
// or written, by which process. Parsed from the raw buffer with every length checked, since a
// record the parser does not understand must be skipped, not trusted.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

namespace reclaimd::access {

// A file as the kernel names it to a FID group: its filesystem's id and its handle, stable over
// renames and reopened with open_by_handle_at.
struct FileId {
  std::uint64_t fsid = 0;
  std::int32_t handleType = 0;
  std::string handle;  // the handle's bytes

  bool operator==(const FileId&) const = default;
};

struct FileIdHash {
  std::size_t operator()(const FileId& id) const noexcept;
};

struct FileAccess {
  FileId file;
  std::int32_t pid = 0;
  std::uint64_t mask = 0;  // FAN_ACCESS, FAN_OPEN, FAN_MODIFY, FAN_CLOSE_WRITE
};

struct Drained {
  std::vector<FileAccess> accesses;
  bool overflow = false;      // the kernel's queue overflowed: accesses were lost
  std::size_t malformed = 0;  // records skipped as not understood
};

// Appends the events in `buffer` (one read() of the group's fd) to `out`.
void parseEvents(std::span<const std::byte> buffer, Drained& out);

}  // namespace reclaimd::access

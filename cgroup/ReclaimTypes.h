// What a memory.reclaim request is and what its answers mean, as plain data and pure
// functions: the engine decides with these; cgroup/Reclaim.h does the writing.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <utility>

#include "base/Result.h"

namespace reclaimd::cgroup {

// How a reclaim request is spelled. The `swappiness=` key arrived in Linux 6.11; older
// kernels answer EINVAL to it.
enum class ReclaimFormat {
  SwappinessZero,  // "<bytes> swappiness=0": file pages only, never anon to swap
  Plain,           // "<bytes>": safe only when no swap is active
};

// "swappiness=0" or "plain", for logs.
const char* toString(ReclaimFormat format);

// "268435456 swappiness=0" or "268435456".
std::string reclaimRequest(std::uint64_t bytes, ReclaimFormat format);

enum class ReclaimStatus {
  Done,         // the kernel reclaimed what was asked
  Partial,      // EAGAIN: reclaimed less than asked; partial success, nothing more to take now
  Unsupported,  // EINVAL: the request's key is not understood by this kernel: re-probe
  Gone,         // ENOENT/ENODEV: the cgroup was removed; skip it quietly
  Interrupted,  // EINTR: a signal arrived mid-reclaim; stop the step
  Failed,       // anything else: log with path and errno
};

// The table of meanings, written once.
ReclaimStatus classifyReclaimErrno(int err);
// True for the errors that mean "this cgroup was removed" (ENOENT, ENODEV from any of its
// files): skip it quietly.
bool cgroupGone(const Error& error);
// The cgroup is there but the file its controller makes is not (EOPNOTSUPP from Cgroup's
// readers): nothing to read or reclaim there until the parent enables the controller.
bool controllerMissing(const Error& error);
const char* toString(ReclaimStatus status);

struct ReclaimWrite {
  ReclaimWrite() = default;
  ReclaimWrite(ReclaimStatus s, int e, std::chrono::nanoseconds t, std::string what = {})
      : status(s), err(e), took(t), error(std::move(what)) {}

  ReclaimStatus status = ReclaimStatus::Done;
  int err = 0;
  std::chrono::nanoseconds took{0};
  // What failed when the file could not be opened, in words ("refused app.slice/memory.reclaim:
  // a symlink"): a refusal has no errno of its own. Empty otherwise.
  std::string error;
};

}  // namespace reclaimd::cgroup

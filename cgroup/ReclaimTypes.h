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

// What the kernel answered to one request: the same table of meanings for an errno from the
// write and for an error opening the file (a refusal, which has no errno, is Failed).
ReclaimStatus classifyReclaim(const Result<void>& result);

struct ReclaimWrite {
  // The write's outcome; an error carries its errno and the file written ("write
  // app.slice/memory.reclaim: Device or resource busy").
  Result<void> result;
  std::chrono::nanoseconds took{0};

  ReclaimStatus status() const { return classifyReclaim(result); }
};

// The answer to a write that returned `err` (0: done) after `took`; `file` names what was
// written, for the error's message.
ReclaimWrite reclaimWritten(int err, std::chrono::nanoseconds took, const std::string& file);

}  // namespace reclaimd::cgroup

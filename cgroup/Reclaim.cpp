#include "cgroup/Reclaim.h"

#include <fcntl.h>

#include <cerrno>

#include "base/Clock.h"
#include "cgroup/ControlFiles.h"

namespace reclaimd::cgroup {

std::string reclaimRequest(std::uint64_t bytes, ReclaimFormat format) {
  switch (format) {
    case ReclaimFormat::SwappinessZero: return std::to_string(bytes) + " swappiness=0";
    case ReclaimFormat::Plain: return std::to_string(bytes);
  }
  return std::to_string(bytes);
}

const char* toString(ReclaimFormat format) {
  switch (format) {
    case ReclaimFormat::SwappinessZero: return "swappiness=0";
    case ReclaimFormat::Plain: return "plain";
  }
  return "?";
}

bool cgroupGone(const Error& error) {
  return error.code.category() == std::generic_category() &&
         (error.code.value() == ENOENT || error.code.value() == ENODEV);
}

bool controllerMissing(const Error& error) {
  return error.code.category() == std::generic_category() && error.code.value() == EOPNOTSUPP;
}

ReclaimStatus classifyReclaimErrno(int err) {
  switch (err) {
    case 0: return ReclaimStatus::Done;
    case EAGAIN: return ReclaimStatus::Partial;
    case EINVAL: return ReclaimStatus::Unsupported;
    case ENOENT:
    case ENODEV: return ReclaimStatus::Gone;
    case EINTR: return ReclaimStatus::Interrupted;
    default: return ReclaimStatus::Failed;
  }
}

ReclaimStatus classifyReclaim(const Result<void>& result) {
  if (result) return ReclaimStatus::Done;
  if (result.error().code.category() != std::generic_category()) return ReclaimStatus::Failed;
  return classifyReclaimErrno(result.error().code.value());
}

ReclaimWrite reclaimWritten(int err, std::chrono::nanoseconds took, const std::string& file) {
  if (err == 0) return ReclaimWrite{{}, took};
  return ReclaimWrite{errnoError(err, "write " + file), took};
}

const char* toString(ReclaimStatus status) {
  switch (status) {
    case ReclaimStatus::Done: return "done";
    case ReclaimStatus::Partial: return "partial";
    case ReclaimStatus::Unsupported: return "unsupported";
    case ReclaimStatus::Gone: return "gone";
    case ReclaimStatus::Interrupted: return "interrupted";
    case ReclaimStatus::Failed: return "failed";
  }
  return "?";
}

Result<ReclaimFile> ReclaimFile::open(int dirFd, std::string label) {
  auto fd = openRegular(dirFd, kMemoryReclaim, O_WRONLY, LastSymlink::Refuse, label + "/" + kMemoryReclaim);
  if (!fd) return fd.error();
  return ReclaimFile(std::move(*fd), std::move(label));
}

ReclaimWrite ReclaimFile::write(std::uint64_t bytes, ReclaimFormat format) {
  const std::string request = reclaimRequest(bytes, format);
  const auto start = SteadyClock::now();
  // No retry on EINTR here: an interrupted reclaim is the caller's cue to stop the step.
  ssize_t n = ::pwrite(fd_.get(), request.data(), request.size(), 0);
  int err = n < 0 ? errno : 0;
  if (n >= 0 && static_cast<std::size_t>(n) != request.size()) err = EIO;
  return reclaimWritten(err, SteadyClock::now() - start, label_ + "/" + kMemoryReclaim);
}

}  // namespace reclaimd::cgroup

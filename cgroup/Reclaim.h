// Writing memory.reclaim; what a request is and what its answers mean: cgroup/ReclaimTypes.h.
#pragma once

#include <cstdint>
#include <string>

#include "base/Files.h"
#include "base/Result.h"
#include "cgroup/ReclaimTypes.h"

namespace reclaimd::cgroup {

// A cgroup's memory.reclaim, kept open for the cgroup's life.
class ReclaimFile {
 public:
  ReclaimFile() = default;
  // Opens memory.reclaim in the cgroup directory `dirFd` for writing; `label` names the
  // cgroup in messages. Errors: the open errno (EACCES/EROFS: not writable; ENOENT: absent).
  static Result<ReclaimFile> open(int dirFd, std::string label);

  // One request, timed. Blocks while the kernel reclaims.
  ReclaimWrite write(std::uint64_t bytes, ReclaimFormat format);
  // The capability probe: a zero-byte request reclaims nothing and says whether the
  // format is understood.
  ReclaimWrite probe(ReclaimFormat format) { return write(0, format); }

  const std::string& label() const { return label_; }

 private:
  ReclaimFile(UniqueFd fd, std::string label) : fd_(std::move(fd)), label_(std::move(label)) {}
  UniqueFd fd_;
  std::string label_;
};

}  // namespace reclaimd::cgroup

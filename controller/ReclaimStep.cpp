#include "controller/ReclaimStep.h"

#include <algorithm>

namespace reclaimd::controller {

StepOutcome runStep(std::uint64_t bytes, std::uint64_t chunk, std::chrono::nanoseconds budget,
                    const ChunkWriter& write, const std::function<bool()>& shouldStop) {
  StepOutcome out;
  chunk = std::max<std::uint64_t>(chunk, 1);
  while (out.requestedBytes < bytes) {
    if (shouldStop() || (out.chunks > 0 && out.took >= budget)) {
      out.stopped = true;
      break;
    }
    const std::uint64_t ask = std::min(chunk, bytes - out.requestedBytes);
    const cgroup::ReclaimWrite w = write(ask);
    ++out.chunks;
    out.requestedBytes += ask;
    out.took += w.took;
    out.status = w.status;
    out.err = w.err;
    if (w.status != cgroup::ReclaimStatus::Done) break;
  }
  return out;
}

}  // namespace reclaimd::controller

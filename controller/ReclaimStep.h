// Writing one reclaim step as bounded chunks.
//
// Large memory.reclaim requests have stalled guests (RCU stall reports against WSL's gradual
// mode), and a blocked write cannot answer SIGTERM or pressure. So a step is a series of
// chunk-sized requests, each timed, with `shouldStop` asked between them.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>

#include "cgroup/Reclaim.h"

namespace reclaimd::controller {

// One request of `bytes`; in the daemon, a ReclaimFile write.
using ChunkWriter = std::function<cgroup::ReclaimWrite(std::uint64_t bytes)>;

struct StepOutcome {
  std::uint64_t requestedBytes = 0;  // sum of the chunks written (asked of the kernel)
  int chunks = 0;
  cgroup::ReclaimStatus status = cgroup::ReclaimStatus::Done;  // of the last chunk
  int err = 0;                                                 // of the last chunk
  std::chrono::nanoseconds took{0};  // time spent in writes
  bool stopped = false;              // shouldStop() or the time budget ended it early
};

// Writes `bytes` in requests of at most `chunk`, until all is asked, a chunk returns other
// than Done (EAGAIN ends the step: the kernel found no more to take), the summed write time
// passes `budget` (at least one chunk is written), or shouldStop() says so (asked before every
// chunk, the first included).
StepOutcome runStep(std::uint64_t bytes, std::uint64_t chunk, std::chrono::nanoseconds budget,
                    const ChunkWriter& write, const std::function<bool()>& shouldStop);

}  // namespace reclaimd::controller

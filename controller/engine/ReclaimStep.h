// Writing one reclaim step as bounded chunks, each sized against the cache as it is now.
//
// Large memory.reclaim requests have stalled guests (RCU stall reports against WSL's gradual
// mode), and a blocked write cannot answer SIGTERM or pressure. So a step is a series of
// chunk-sized requests, each timed, with `shouldStop` asked between them. The cache is
// measured before every chunk, and the last chunks shrink so the step lands on the floor.
// Kernels free more than asked in two ways, and each is learned from the chunks: 6.1 in
// proportion (15-25 % more: 64M freed ~75 MiB in the VM tests), which scales down the next
// request; newer kernels by whole folios, up to one large folio (2 MiB) beyond any request
// (7.2 freed 4 MiB for 2.2 asked), which the last request keeps off the floor.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <limits>
#include <optional>

#include "base/Checked.h"
#include "cgroup/ReclaimTypes.h"

namespace reclaimd::controller {

inline constexpr std::uint64_t kNoRoomLimit = std::numeric_limits<std::uint64_t>::max();

struct StepLimits {
  std::uint64_t stepBytes = 0;         // at most this much asked in this step
  std::uint64_t floor = 0;             // never ask for what would take the target under this
  std::uint64_t chunk = 0;             // largest single request
  std::chrono::nanoseconds budget{0};  // write time after which the step yields (>= 1 chunk)
  // Freed per byte asked, as learned from earlier steps (a property of the kernel); 0 when not
  // known yet: the first chunk then aims at half the distance to the floor, to learn it.
  double overshoot = 0;
  std::uint64_t excess = 0;  // freed beyond overshoot x asked by one request, as learned
  // Most the step may free: what the machine holds above its own floor, for a cgroup target
  // whose floor is its own. Freed, not asked, so a kernel freeing more than asked cannot cross it.
  std::uint64_t room = kNoRoomLimit;
};

enum class StepEnd {
  Asked,      // the whole step was asked for
  Floor,      // the target reached the floor
  Kernel,     // a chunk came back other than Done (EAGAIN, EINVAL, gone, error)
  Stopped,    // shouldStop() said so
  Budget,     // the time budget ran out
  Unmeasured  // the target's figures could not be read
};

const char* toString(StepEnd end);

struct StepOutcome {
  std::uint64_t requestedBytes = 0;  // sum of the chunks asked of the kernel
  std::uint64_t before = 0;          // reclaimable bytes before the first chunk
  std::uint64_t after = 0;           // ... after the last one
  int chunks = 0;
  Result<void> result;  // of the last chunk (ReclaimWrite)
  std::chrono::nanoseconds took{0};  // time spent in writes
  StepEnd end = StepEnd::Asked;
  double overshoot = 0;     // as learned by the end of this step (0: still unknown)
  std::uint64_t excess = 0;  // ... and the excess (StepLimits)

  std::int64_t freed() const { return saturatingDifference(before, after); }
  cgroup::ReclaimStatus status() const { return cgroup::classifyReclaim(result); }
};

// The most of what a request freed beyond overshoot x asked that counts as excess: one
// PMD-sized folio (2 MiB on x86-64), the largest page-cache folio there. Beyond it, the ratio
// was wrong, and the chunk teaches the ratio instead.
inline constexpr std::uint64_t kMaxExcessBytes = 2 * 1024 * 1024;

// What a chunk may ask with `above` bytes over the floor on a kernel that frees `overshoot`
// per byte asked (0: not known yet, half the distance then) and up to `excess` more. A plan
// that would ask less than policies::kMinRequestBytes is not worth a step: a step ends it at
// the floor unasked.
std::uint64_t aimAbove(std::uint64_t above, double overshoot, std::uint64_t excess);

// A step taken one chunk at a time, for a caller that gives each chunk as a command and hears
// its result later: next() says the next request (asking `shouldStop` only when one could
// follow), written() takes its result and the cache measured after it.
class StepRun {
 public:
  // `measured`: the target's reclaimable bytes before the first chunk (nullopt: unreadable).
  StepRun(const StepLimits& limits, std::optional<std::uint64_t> measured);
  // The next request's size; nullopt when the step is over (outcome().end says why).
  std::optional<std::uint64_t> next(const std::function<bool()>& shouldStop);
  // The result of the request next() gave; answers what it freed.
  std::int64_t written(const cgroup::ReclaimWrite& write, std::optional<std::uint64_t> measured);
  bool over() const { return over_; }
  const StepOutcome& outcome() const { return out_; }
  std::uint64_t asking() const { return asking_; }

 private:
  StepOutcome end(StepEnd why);
  void learn(std::int64_t freed);

  StepLimits limits_;
  StepOutcome out_;
  double overshoot_ = 0;
  std::uint64_t excess_ = 0;
  std::uint64_t asking_ = 0;
  bool over_ = false;
};

}  // namespace reclaimd::controller

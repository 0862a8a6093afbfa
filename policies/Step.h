// Sizing a reclaim step: pure functions of the machine's figures and the policy.
#pragma once

#include <cstdint>

#include "policies/Policy.h"

namespace reclaimd::policies {

// Requests smaller than this are not worth a write: the kernel reclaims in 32-page batches
// (and 6.1 frees ~1.5 MiB for a 1 MiB request), and an idle machine's cache drifts by this
// much on its own.
inline constexpr std::uint64_t kMinRequestBytes = 1 * kMiB;

// MemTotal/stepDivisor clamped to [stepMin, stepMax]: 256 MiB at 2-8 GiB, 512 MiB at 16 GiB,
// 1 GiB from 32 GiB up with the defaults.
std::uint64_t stepBytes(std::uint64_t memTotal, const ReclaimSettings& settings);

// How much to ask for now: min(reclaimable - floor, step), 0 at or under the floor.
std::uint64_t requestBytes(std::uint64_t reclaimable, std::uint64_t floor, std::uint64_t step);

}  // namespace reclaimd::policies

// Sizing a reclaim step: pure functions of the machine's figures and the policy.
#pragma once

#include <cstdint>

#include "policies/Policy.h"

namespace reclaimd::policies {

// MemTotal/stepDivisor clamped to [stepMin, stepMax]: 256 MiB at 2-8 GiB, 512 MiB at 16 GiB,
// 1 GiB from 32 GiB up with the defaults.
std::uint64_t stepBytes(std::uint64_t memTotal, const ReclaimSettings& settings);

// How much to ask for now: min(reclaimable - floor, step), 0 at or under the floor.
std::uint64_t requestBytes(std::uint64_t reclaimable, std::uint64_t floor, std::uint64_t step);

}  // namespace reclaimd::policies

#include "policies/Step.h"

#include <algorithm>

namespace reclaimd::policies {

std::uint64_t stepBytes(std::uint64_t memTotal, const ReclaimSettings& settings) {
  std::uint64_t scaled = memTotal / std::max<std::uint32_t>(settings.stepDivisor, 1);
  return std::clamp(scaled, settings.stepMin, std::max(settings.stepMin, settings.stepMax));
}

std::uint64_t requestBytes(std::uint64_t reclaimable, std::uint64_t floor, std::uint64_t step) {
  if (reclaimable <= floor) return 0;
  return std::min(reclaimable - floor, step);
}

}  // namespace reclaimd::policies

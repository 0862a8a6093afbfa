#include "base/Checked.h"

namespace reclaimd {

Result<std::chrono::nanoseconds> checkedNanoseconds(std::uint64_t count, std::chrono::nanoseconds unit,
                                                    const std::string& what) {
  constexpr auto kMax = static_cast<std::uint64_t>(std::numeric_limits<std::chrono::nanoseconds::rep>::max());
  if (unit.count() < 0) return errnoError(EINVAL, what + ": negative unit");
  auto ns = checkedMul(count, static_cast<std::uint64_t>(unit.count()));
  if (!ns || *ns > kMax)
    return errnoError(EOVERFLOW, what + ": " + std::to_string(count) + " does not fit in nanoseconds");
  return std::chrono::nanoseconds(static_cast<std::chrono::nanoseconds::rep>(*ns));
}

}  // namespace reclaimd

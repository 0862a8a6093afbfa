#include "base/Limits.h"

#include <sys/resource.h>

#include <cerrno>

namespace reclaimd {

Result<std::uint64_t> raiseFdLimit() {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0) return errnoError(errno, "getrlimit(RLIMIT_NOFILE)");
  if (limit.rlim_cur != limit.rlim_max) {
    limit.rlim_cur = limit.rlim_max;
    if (::setrlimit(RLIMIT_NOFILE, &limit) != 0) {
      return errnoError(errno, "raise RLIMIT_NOFILE to " + std::to_string(limit.rlim_max));
    }
  }
  return static_cast<std::uint64_t>(limit.rlim_cur);
}

}  // namespace reclaimd

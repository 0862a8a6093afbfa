#include "base/Clock.h"

#include <time.h>

namespace reclaimd {

std::chrono::nanoseconds processCpuTime() {
  timespec ts{};
  // Cannot fail for CLOCK_PROCESS_CPUTIME_ID with a valid pointer.
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return std::chrono::seconds(ts.tv_sec) + std::chrono::nanoseconds(ts.tv_nsec);
}

}  // namespace reclaimd

#include "controller/engine/StatusData.h"

#include <fmt/format.h>

namespace reclaimd::controller {

std::string formatBusyCgroups(const std::vector<BusyCgroup>& busy) {
  std::string out;
  for (const BusyCgroup& b : busy) {
    // One decimal as the machine's share is read; two below 0.1 %, where one would say 0.0 of a
    // cgroup that is there because it used something.
    out += fmt::format("{}{} {:.{}f}%", out.empty() ? "" : ", ", b.path, b.busyPercent, b.busyPercent < 0.1 ? 2 : 1);
  }
  return out;
}

}  // namespace reclaimd::controller

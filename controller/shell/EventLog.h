// Logs the engine's events, with a rate limit on the per-target ones: a tree with thousands of
// cgroups coming and going must not turn into tens of thousands of lines a minute.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "base/Clock.h"
#include "base/Event.h"

namespace reclaimd::controller {

class EventLog {
 public:
  void write(const Events& events, TimePoint now);

 private:
  struct Budget {
    TimePoint since{};
    std::uint64_t said = 0, suppressed = 0;
  };
  bool allow(const Event& event, TimePoint now);
  std::map<std::string, Budget, std::less<>> budgets_;
};

}  // namespace reclaimd::controller

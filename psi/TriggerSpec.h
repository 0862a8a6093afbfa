// A PSI trigger's threshold, as plain data: what the engine decides and logs, and what
// psi/Trigger.h registers with the kernel.
#pragma once

#include <chrono>
#include <string>

namespace reclaimd::psi {

struct TriggerSpec {
  std::chrono::microseconds stall{150'000};
  std::chrono::microseconds window{1'000'000};
};

// "some 150000 1000000"
std::string triggerText(const TriggerSpec& spec);

}  // namespace reclaimd::psi

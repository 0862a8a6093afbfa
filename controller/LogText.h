// Small helpers for key=value log lines.
#pragma once

#include <chrono>
#include <string>

namespace reclaimd::controller {

// A value that may hold spaces or quotes, quoted and escaped: reason="no swap \"here\"".
std::string quoted(const std::string& text);

inline double toMs(std::chrono::nanoseconds d) {
  return std::chrono::duration<double, std::milli>(d).count();
}

}  // namespace reclaimd::controller

// Routes spdlog's default logger to a string for one test, and back: for code that logs through
// spdlog itself rather than handing its events back.
#pragma once

#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <memory>
#include <sstream>
#include <string>

namespace reclaimd::testing {

class CapturedLog {
 public:
  CapturedLog() : previous_(spdlog::default_logger()) {
    auto logger = std::make_shared<spdlog::logger>("test", std::make_shared<spdlog::sinks::ostream_sink_st>(out_));
    logger->set_pattern("%v");
    logger->set_level(spdlog::level::info);
    spdlog::set_default_logger(logger);
  }
  CapturedLog(const CapturedLog&) = delete;
  CapturedLog& operator=(const CapturedLog&) = delete;
  ~CapturedLog() { spdlog::set_default_logger(previous_); }

  std::string text() const { return out_.str(); }
  // Lines that hold `needle`.
  int count(const std::string& needle) const {
    std::istringstream in(out_.str());
    int n = 0;
    for (std::string line; std::getline(in, line);)
      n += line.find(needle) != std::string::npos;
    return n;
  }

 private:
  std::ostringstream out_;
  std::shared_ptr<spdlog::logger> previous_;
};

}  // namespace reclaimd::testing

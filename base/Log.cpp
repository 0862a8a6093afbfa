#include "base/Log.h"

#include <spdlog/async.h>
#include <spdlog/sinks/stdout_sinks.h>

namespace reclaimd {

std::optional<spdlog::level::level_enum> parseLogLevel(std::string_view name) {
  if (name == "trace") return spdlog::level::trace;
  if (name == "debug") return spdlog::level::debug;
  if (name == "info") return spdlog::level::info;
  if (name == "warn" || name == "warning") return spdlog::level::warn;
  if (name == "error") return spdlog::level::err;
  if (name == "off") return spdlog::level::off;
  return std::nullopt;
}

void initLogging(spdlog::level::level_enum level) {
  // 8192 lines is minutes of the busiest logging reclaimd does; beyond that the oldest
  // lines go rather than the loop waiting on a slow consumer.
  constexpr std::size_t kQueueLines = 8192;
  spdlog::init_thread_pool(kQueueLines, 1);
  auto logger = spdlog::create_async_nb<spdlog::sinks::stderr_sink_mt>("reclaimd");
  logger->set_pattern("%Y-%m-%dT%H:%M:%S.%f %l %v");
  logger->set_level(level);
  logger->flush_on(spdlog::level::trace);
  spdlog::set_default_logger(logger);
}

void shutdownLogging() { spdlog::shutdown(); }

}  // namespace reclaimd

#include "base/Log.h"

#include "base/Event.h"
#include "base/Systemd.h"

#include <spdlog/async.h>
#include <spdlog/sinks/base_sink.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <sys/stat.h>
#include <syslog.h>

#include <cctype>
#include <cstdlib>
#include <cstring>
#include <mutex>

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

std::vector<std::string> journalFields(std::string_view message) {
  std::vector<std::string> out;
  std::size_t pos = 0;
  while (pos < message.size()) {
    while (pos < message.size() && message[pos] == ' ')
      ++pos;
    const std::size_t eq = message.find('=', pos);
    const std::size_t space = message.find(' ', pos);
    if (eq == std::string_view::npos || (space != std::string_view::npos && space < eq)) {
      if (space == std::string_view::npos) break;
      pos = space + 1;  // a word without '=': not a field
      continue;
    }
    std::string key = "RECLAIMD_";
    bool valid = eq > pos;
    for (std::size_t i = pos; i < eq; ++i) {
      const char c = message[i];
      if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') valid = false;
      key.push_back(static_cast<char>(std::toupper(static_cast<unsigned char>(c))));
    }
    std::string value;
    pos = eq + 1;
    if (pos < message.size() && message[pos] == '"') {
      const std::size_t begin = ++pos;
      for (; pos < message.size() && message[pos] != '"'; ++pos) {
        if (message[pos] == '\\' && pos + 1 < message.size()) ++pos;
      }
      value = unescapeQuoted(message.substr(begin, pos - begin));
      ++pos;
    } else {
      const std::size_t end = message.find(' ', pos);
      value = std::string(message.substr(pos, end == std::string_view::npos ? std::string_view::npos : end - pos));
      pos = end == std::string_view::npos ? message.size() : end;
    }
    if (valid) out.push_back(key + "=" + value);
  }
  return out;
}

bool stderrIsJournal() {
  const char* stream = std::getenv("JOURNAL_STREAM");
  if (stream == nullptr) return false;
  struct stat st {};
  if (::fstat(2, &st) != 0) return false;
  unsigned long long dev = 0, ino = 0;
  if (std::sscanf(stream, "%llu:%llu", &dev, &ino) != 2) return false;
  return dev == st.st_dev && ino == st.st_ino;
}

namespace {

int priorityOf(spdlog::level::level_enum level) {
  switch (level) {
    case spdlog::level::trace:
    case spdlog::level::debug: return LOG_DEBUG;
    case spdlog::level::info: return LOG_INFO;
    case spdlog::level::warn: return LOG_WARNING;
    case spdlog::level::err: return LOG_ERR;
    case spdlog::level::critical: return LOG_CRIT;
    case spdlog::level::off:
    case spdlog::level::n_levels: break;
  }
  return LOG_INFO;
}

// Sends each message to journald with its key=value fields as RECLAIMD_* fields, so
// `journalctl RECLAIMD_EVENT=reclaim_step RECLAIMD_CGROUP=build.slice` finds the steps.
class JournalSink final : public spdlog::sinks::base_sink<std::mutex> {
 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    const std::string_view text(msg.payload.data(), msg.payload.size());
    std::vector<std::string> fields = journalFields(text);
    fields.push_back("MESSAGE=" + std::string(text));
    fields.push_back("PRIORITY=" + std::to_string(priorityOf(msg.level)));
    fields.push_back("SYSLOG_IDENTIFIER=reclaimd");
    // A journal that cannot take the line loses it; logging never blocks nor fails the loop.
    (void)journalSend(fields);
  }
  void flush_() override {}
};

}  // namespace

void initLogging(spdlog::level::level_enum level) {
  // Each queue slot is preallocated (about 350 bytes: a message buffer with its inline text),
  // so the queue is most of the daemon's memory: 8192 slots were 2.8 MiB of a 10.8 MiB RSS.
  // 1024 lines hold every line of a busy minute (a pass logs a few dozen); beyond that the
  // oldest lines go rather than the loop waiting on a slow consumer.
  constexpr std::size_t kQueueLines = 1024;
  spdlog::init_thread_pool(kQueueLines, 1);
  std::shared_ptr<spdlog::logger> logger;
  if (stderrIsJournal()) {
    logger = spdlog::create_async_nb<JournalSink>("reclaimd");
  } else {
    logger = spdlog::create_async_nb<spdlog::sinks::stderr_sink_mt>("reclaimd");
    logger->set_pattern("%Y-%m-%dT%H:%M:%S.%f %l %v");
  }
  logger->set_level(level);
  logger->flush_on(spdlog::level::trace);
  spdlog::set_default_logger(logger);
}

namespace {

spdlog::level::level_enum toLevel(Severity severity) {
  switch (severity) {
    case Severity::Trace: return spdlog::level::trace;
    case Severity::Debug: return spdlog::level::debug;
    case Severity::Info: return spdlog::level::info;
    case Severity::Warn: return spdlog::level::warn;
    case Severity::Error: return spdlog::level::err;
  }
  return spdlog::level::info;
}

}  // namespace

void emit(const Event& event) {
  const spdlog::level::level_enum level = toLevel(event.severity());
  if (!spdlog::should_log(level)) return;
  spdlog::log(level, "{}", event.text());
}

bool logs(Severity severity) {
  return spdlog::should_log(toLevel(severity));
}

void shutdownLogging() {
  spdlog::shutdown();
}

}  // namespace reclaimd

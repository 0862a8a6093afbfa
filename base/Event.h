// One log event: a name and key=value fields, built in one place so that every value is
// escaped the same way. Nothing a cgroup name or a kernel error contains (spaces, quotes, '=',
// newlines, invalid UTF-8) can forge a field or a line: a value that is not plainly safe is
// quoted, with \" \\ \n \t \r and \xHH for every other control byte and every byte that is not
// part of valid UTF-8. journalFields (Log.h) undoes exactly this quoting.
//
// Events are plain data: the engine returns them, the shell logs them, tests read their fields.
#pragma once

#include <chrono>
#include <concepts>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace reclaimd {

enum class Severity { Trace, Debug, Info, Warn, Error };

class Event {
 public:
  Event(Severity severity, std::string_view name) : severity_(severity), name_(name) {}

  Event& add(std::string_view key, std::string_view value);
  Event& add(std::string_view key, const char* value) { return add(key, std::string_view(value)); }
  Event& add(std::string_view key, const std::string& value) { return add(key, std::string_view(value)); }
  Event& add(std::string_view key, bool value) { return add(key, value ? "true" : "false"); }
  template <std::integral T>
  requires(!std::same_as<T, bool>) Event& add(std::string_view key, T value) { return add(key, std::to_string(value)); }
  // A fixed-point number: add("window_busy_pct", 0.4871, 3) gives window_busy_pct=0.487.
  Event& add(std::string_view key, double value, int decimals);
  // Bytes as MiB with one decimal: mib("floor_mib", 134217728) gives floor_mib=128.0.
  Event& mib(std::string_view key, std::uint64_t bytes);
  Event& mibSigned(std::string_view key, std::int64_t bytes);
  // A duration in milliseconds with one decimal.
  Event& ms(std::string_view key, std::chrono::nanoseconds d);

  Severity severity() const { return severity_; }
  // The level, changed once it is known that the event says less than it was built to.
  void setSeverity(Severity severity) { severity_ = severity; }
  const std::string& name() const { return name_; }
  // The raw (unescaped) value of `key`, for tests and rate limits; nullopt when absent.
  std::optional<std::string> field(std::string_view key) const;
  // "event=<name> key=value ...", escaped.
  std::string text() const;

 private:
  Severity severity_;
  std::string name_;
  std::vector<std::pair<std::string, std::string>> fields_;
};

// A value as it appears after "key=": bare when every byte is in [A-Za-z0-9_.,:/@%+=-] (and it is
// not empty), else quoted and escaped as above.
std::string escapeValue(std::string_view raw);

// Undoes escapeValue's quoting of the text between the quotes.
std::string unescapeQuoted(std::string_view inner);

using Events = std::vector<Event>;

}  // namespace reclaimd

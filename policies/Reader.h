// The loader's cursor over YAML documents: typed values, positions, and every error collected.
//
// Internal to policies/ (yaml-cpp stays inside this library). Errors name the file, line and
// column of the value the user wrote; Reader remembers where each key was last written so a
// check between two keys blames the one the user wrote, not a default the file never names.
#pragma once

#include <yaml-cpp/yaml.h>

#include <chrono>
#include <cstdint>
#include <initializer_list>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "base/Result.h"
#include "policies/Policy.h"

namespace reclaimd::policies {

// Where a key was written: which file (an index into the sources) and the 1-based position.
struct Where {
  std::size_t file = 0;
  int line = 0;
  int column = 0;

  auto operator<=>(const Where&) const = default;
};

// One side of a check between two keys ("interval <= grace").
struct Side {
  std::string name;              // "idle.interval", "rules[2].grace"
  std::string value;             // as shown: "10s"
  const Where* where = nullptr;  // where the user wrote it; nullptr: a default or inherited
  std::string origin;            // said when where is null: "its default", "the machine's"
};

class Reader {
 public:
  explicit Reader(std::vector<std::string> sources) : sources_(std::move(sources)) {}

  // Errors and positions from now on are in sources[file].
  void setFile(std::size_t file) { file_ = file; }
  std::size_t file() const { return file_; }
  const std::string& source(std::size_t file) const { return sources_[file]; }

  Where where(const YAML::Node& node) const;
  void fail(const YAML::Node& node, const std::string& key, const std::string& problem);
  void failAt(const Where& at, const std::string& key, const std::string& problem);
  // An error with a position but no key (a whole-file problem).
  void failFile(std::size_t file, int line, int column, const std::string& problem);

  // True when `node` is a mapping (or empty); reports unknown and repeated keys.
  bool checkMap(const YAML::Node& node, const std::string& path, const std::vector<std::string_view>& allowed);

  // Where `key` ("idle.grace") was last written, or nullptr.
  const Where* written(const std::string& key) const;

  // Checks low <= high (the caller compares); when it fails, blames the side written last (a
  // written side over a default), saying "must not be <bigger> than" or "<smaller> than".
  void order(bool holds, const Side& low, const Side& high, std::string_view bigger, std::string_view smaller);

  // Calls `read(value, fullKey)` when `key` is present in the map.
  template <typename Fn>
  void with(const YAML::Node& map, const std::string& path, const char* key, Fn read) {
    // IsDefined first: a const lookup of an absent key gives a node that throws on IsMap.
    if (!map.IsDefined() || !map.IsMap()) return;
    YAML::Node value = map[key];
    if (!value.IsDefined()) return;
    const std::string full = path.empty() ? key : path + "." + key;
    written_[full] = where(value);
    if (!value.IsScalar()) {
      fail(value, full, "expected a single value");
      return;
    }
    read(value, full);
  }

  void bytes(const YAML::Node& map, const std::string& path, const char* key, std::uint64_t& out, std::uint64_t min,
             std::uint64_t max);
  void duration(const YAML::Node& map, const std::string& path, const char* key, std::chrono::milliseconds& out,
                std::chrono::milliseconds min, std::chrono::milliseconds max);
  // A percentage within [min, max] ("0.5" or "0.5%").
  void percent(const YAML::Node& map, const std::string& path, const char* key, double& out, double min, double max);
  void count(const YAML::Node& map, const std::string& path, const char* key, std::uint32_t& out, std::uint32_t min,
             std::uint32_t max);
  void boolean(const YAML::Node& map, const std::string& path, const char* key, bool& out);
  void mode(const YAML::Node& map, const std::string& path, const char* key, Mode& out);

  bool ok() const { return errors_.empty(); }
  // Every error, one "source:line:column: key: problem" line each.
  Error error() const;

 private:
  std::vector<std::string> sources_;
  std::size_t file_ = 0;
  // One per problem, with where it is: error() lists them in file, line and column order, not in
  // the order the checks ran (the key table's), so they read top to bottom beside the file.
  struct Problem {
    std::size_t file;
    int line;
    int column;
    std::string text;
  };
  std::vector<Problem> errors_;
  std::map<std::string, Where> written_;
};

}  // namespace reclaimd::policies

#include "policies/Reader.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <limits>
#include <set>
#include <tuple>

#include "base/Quantities.h"

namespace reclaimd::policies {

using std::chrono::milliseconds;

namespace {

// A value that parses once its leading digits are a single "1" ("99999999T", "1e30h" does not)
// has the right form and a number too large to hold: out of range, not malformed.
template <typename Parse>
bool tooLarge(std::string_view text, Parse parse) {
  const auto digits = std::min(text.find_first_not_of("0123456789"), text.size());
  if (digits == 0) return false;
  const std::string one = "1" + std::string(text.substr(digits));
  return parse(one).has_value();
}

}  // namespace

Where Reader::where(const YAML::Node& node) const {
  const YAML::Mark mark = node.Mark();
  return Where{file_, mark.line + 1, mark.column + 1};
}

void Reader::fail(const YAML::Node& node, const std::string& key, const std::string& problem) {
  failAt(where(node), key, problem);
}

void Reader::failAt(const Where& at, const std::string& key, const std::string& problem) {
  failFile(at.file, at.line, at.column, key + ": " + problem);
}

void Reader::failFile(std::size_t file, int line, int column, const std::string& problem) {
  errors_.push_back({file, line, column,
                     sources_[file] + ":" + std::to_string(line) + ":" + std::to_string(column) + ": " + problem});
}

bool Reader::checkMap(const YAML::Node& node, const std::string& path, const std::vector<std::string_view>& allowed) {
  if (!node.IsDefined() || node.IsNull()) return true;  // absent or empty: all defaults
  if (!node.IsMap()) {
    // `trim: false` for `trim: {enabled: false}`: naming the keys shows what goes inside.
    std::string keys;
    for (auto a : allowed)
      keys += (keys.empty() ? "" : ", ") + std::string(a);
    fail(node, path.empty() ? "policy" : path, "expected a mapping of keys to values (" + keys + ")");
    return false;
  }
  std::set<std::string> seen;
  for (auto it = node.begin(); it != node.end(); ++it) {
    const YAML::Node keyNode = it->first;  // a copy: the iterator yields a temporary proxy
    if (!keyNode.IsScalar()) {
      fail(keyNode, path.empty() ? "policy" : path, "keys must be plain words");
      continue;
    }
    const std::string& key = keyNode.Scalar();
    const std::string full = path.empty() ? key : path + "." + key;
    if (!seen.insert(key).second) fail(keyNode, full, "key appears twice");
    bool known = false;
    for (auto a : allowed)
      known = known || a == key;
    if (!known) {
      std::string list;
      for (auto a : allowed)
        list += (list.empty() ? "" : ", ") + std::string(a);
      fail(keyNode, full, "unknown key (known here: " + list + ")");
    }
  }
  return true;
}

const Where* Reader::written(const std::string& key) const {
  auto it = written_.find(key);
  return it == written_.end() ? nullptr : &it->second;
}

void Reader::order(bool holds, const Side& low, const Side& high, std::string_view bigger, std::string_view smaller) {
  if (holds) return;
  auto shown = [](const Side& s) { return s.value + (s.where ? "" : ", " + s.origin); };
  const bool blameLow = low.where && (!high.where || *high.where < *low.where);
  if (blameLow) {
    failAt(*low.where, low.name,
           "must not be " + std::string(bigger) + " than " + high.name + " (" + shown(high) + ")");
  } else if (high.where) {
    failAt(*high.where, high.name,
           "must not be " + std::string(smaller) + " than " + low.name + " (" + shown(low) + ")");
  } else {
    // Two defaults that disagree: a bug in the built-in policy, still an error, not a crash.
    failFile(file_, 1, 1, low.name + ": " + shown(low) + " is " + std::string(bigger) + " than " + high.name);
  }
}

void Reader::bytes(const YAML::Node& map, const std::string& path, const char* key, std::uint64_t& out,
                   std::uint64_t min, std::uint64_t max) {
  with(map, path, key, [&](const YAML::Node& v, const std::string& full) {
    auto parsed = parseBytes(v.Scalar());
    if (!parsed && !tooLarge(v.Scalar(), parseBytes))
      return fail(v, full, "expected a size like \"128M\" or \"1G\", got \"" + v.Scalar() + "\"");
    if (!parsed || *parsed < min || *parsed > max) {
      return fail(v, full, "must be between " + formatBytes(min) + " and " + formatBytes(max) + ", got " + v.Scalar());
    }
    out = *parsed;
  });
}

void Reader::duration(const YAML::Node& map, const std::string& path, const char* key, milliseconds& out,
                      milliseconds min, milliseconds max) {
  with(map, path, key, [&](const YAML::Node& v, const std::string& full) {
    auto parsed = parseDuration(v.Scalar());
    if (!parsed && !tooLarge(v.Scalar(), parseDuration))
      return fail(v, full, "expected a duration like \"500ms\", \"30s\" or \"2m\", got \"" + v.Scalar() + "\"");
    if (!parsed || *parsed < min || *parsed > max) {
      return fail(v, full,
                  "must be between " + formatDuration(min) + " and " + formatDuration(max) + ", got " + v.Scalar());
    }
    out = *parsed;
  });
}

void Reader::percent(const YAML::Node& map, const std::string& path, const char* key, double& out, double min,
                     double max) {
  with(map, path, key, [&](const YAML::Node& v, const std::string& full) {
    std::string_view text = v.Scalar();
    if (!text.empty() && text.back() == '%') text.remove_suffix(1);
    double value = 0;
    auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    const bool whole = ptr == text.data() + text.size() && !text.empty();
    if (whole && ec == std::errc::result_out_of_range) {
      value = std::numeric_limits<double>::infinity();  // a number past a double's range: out of range
    } else if (ec != std::errc() || !whole) {
      return fail(v, full, "expected a percentage like 0.5, got \"" + v.Scalar() + "\"");
    }
    if (!(value >= min && value <= max)) {  // NaN fails too
      return fail(
          v, full,
          "must be between " + fmt::format("{:g}", min) + " and " + fmt::format("{:g}", max) + ", got " + v.Scalar());
    }
    out = value;
  });
}

void Reader::count(const YAML::Node& map, const std::string& path, const char* key, std::uint32_t& out,
                   std::uint32_t min, std::uint32_t max) {
  with(map, path, key, [&](const YAML::Node& v, const std::string& full) {
    auto parsed = parseU64(v.Scalar());
    if (!parsed || *parsed < min || *parsed > max) {
      return fail(v, full,
                  "expected a whole number from " + std::to_string(min) + " to " + std::to_string(max) + ", got \"" +
                      v.Scalar() + "\"");
    }
    out = static_cast<std::uint32_t>(*parsed);
  });
}

void Reader::boolean(const YAML::Node& map, const std::string& path, const char* key, bool& out) {
  with(map, path, key, [&](const YAML::Node& v, const std::string& full) {
    if (v.Scalar() == "true")
      out = true;
    else if (v.Scalar() == "false")
      out = false;
    else
      fail(v, full, "expected true or false, got \"" + v.Scalar() + "\"");
  });
}

void Reader::mode(const YAML::Node& map, const std::string& path, const char* key, Mode& out) {
  with(map, path, key, [&](const YAML::Node& v, const std::string& full) {
    auto parsed = parseMode(v.Scalar());
    if (!parsed) return fail(v, full, "expected disabled, dropcache or gradual, got \"" + v.Scalar() + "\"");
    out = *parsed;
  });
}

Error Reader::error() const {
  std::vector<Problem> sorted = errors_;
  std::stable_sort(sorted.begin(), sorted.end(), [](const Problem& a, const Problem& b) {
    return std::tie(a.file, a.line, a.column) < std::tie(b.file, b.line, b.column);
  });
  std::string all;
  for (const auto& e : sorted)
    all += (all.empty() ? "" : "\n") + e.text;
  return invalidError(all);
}

}  // namespace reclaimd::policies

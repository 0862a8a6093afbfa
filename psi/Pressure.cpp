#include "psi/Pressure.h"

#include <charconv>
#include <string>

#include "base/Units.h"

namespace reclaimd::psi {

namespace {

std::optional<double> parseDouble(std::string_view text) {
  double value = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (ec != std::errc() || ptr != end || text.empty() || value < 0) return std::nullopt;
  return value;
}

// "avg10=0.00 avg60=0.00 avg300=0.00 total=0" after the "some"/"full" word.
Result<PressureLine> parseFields(std::string_view rest, std::string_view line) {
  PressureLine out;
  bool seen[4] = {};
  std::size_t pos = 0;
  while (pos < rest.size()) {
    std::size_t begin = rest.find_first_not_of(' ', pos);
    if (begin == std::string_view::npos) break;
    std::size_t end = rest.find(' ', begin);
    if (end == std::string_view::npos) end = rest.size();
    std::string_view field = rest.substr(begin, end - begin);
    pos = end;
    std::size_t eq = field.find('=');
    if (eq == std::string_view::npos) return parseError("pressure: malformed field in \"" + std::string(line) + "\"");
    std::string_view key = field.substr(0, eq), value = field.substr(eq + 1);
    int slot = key == "avg10" ? 0 : key == "avg60" ? 1 : key == "avg300" ? 2 : key == "total" ? 3 : -1;
    if (slot < 0) continue;  // a future kernel's extra field
    bool good = false;
    if (slot == 3) {
      auto v = parseU64(value);
      if ((good = v.has_value())) out.totalUsec = *v;
    } else {
      auto v = parseDouble(value);
      if ((good = v.has_value())) (slot == 0 ? out.avg10 : slot == 1 ? out.avg60 : out.avg300) = *v;
    }
    if (!good) return parseError("pressure: malformed " + std::string(key) + " in \"" + std::string(line) + "\"");
    seen[slot] = true;
  }
  if (!seen[0] || !seen[1] || !seen[2] || !seen[3]) {
    return parseError("pressure: missing field in \"" + std::string(line) + "\"");
  }
  return out;
}

}  // namespace

Result<Pressure> parsePressure(std::string_view content) {
  Pressure p;
  bool haveSome = false;
  while (!content.empty()) {
    std::size_t newline = content.find('\n');
    std::string_view line = content.substr(0, newline);
    content.remove_prefix(newline == std::string_view::npos ? content.size() : newline + 1);
    if (line.empty()) continue;
    std::size_t space = line.find(' ');
    std::string_view kind = line.substr(0, space);
    if (space == std::string_view::npos || (kind != "some" && kind != "full")) {
      return parseError("pressure: unexpected line \"" + std::string(line) + "\"");
    }
    auto fields = parseFields(line.substr(space + 1), line);
    if (!fields) return fields.error();
    if (kind == "some") {
      p.some = *fields;
      haveSome = true;
    } else {
      p.full = *fields;
    }
  }
  if (!haveSome) return parseError("pressure: no \"some\" line");
  return p;
}

}  // namespace reclaimd::psi

#include "psi/Pressure.h"

#include <charconv>
#include <cmath>
#include <limits>
#include <string>

#include "base/Text.h"
#include "base/Quantities.h"

namespace reclaimd::psi {

namespace {

// The most std::chrono::microseconds holds: a larger total cannot become a duration, and a
// difference of two totals below it always fits.
constexpr std::uint64_t kMaxTotalUsec = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());

// An average: a finite, non-negative percentage. from_chars also reads "nan" and "inf", which the
// kernel never writes (it prints "%lu.%02lu") and which would poison every comparison made with
// them (fuzzing found them accepted).
std::optional<double> parseDouble(std::string_view text) {
  double value = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (ec != std::errc() || ptr != end || text.empty() || !std::isfinite(value) || value < 0) return std::nullopt;
  return value;
}

// "avg10=0.00 avg60=0.00 avg300=0.00 total=0" after the "some"/"full" word.
Result<PressureLine> parseFields(std::string_view rest, std::string_view line) {
  PressureLine out;
  bool seen[4] = {};
  for (std::string_view field : fields(rest, " ")) {
    auto keyed = splitOnce(field, '=');
    if (!keyed) return parseError("pressure: malformed field in \"" + std::string(line) + "\"");
    const auto [key, value] = *keyed;
    int slot = key == "avg10" ? 0 : key == "avg60" ? 1 : key == "avg300" ? 2 : key == "total" ? 3 : -1;
    if (slot < 0) continue;  // a future kernel's extra field
    bool good = false;
    if (slot == 3) {
      auto v = parseU64(value);
      if (v && *v > kMaxTotalUsec) {
        return errnoError(EOVERFLOW, "pressure: total does not fit in microseconds in \"" + std::string(line) + "\"");
      }
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

// some avg10=0.00 avg60=0.00 avg300=0.00 total=0
// full avg10=0.00 avg60=0.00 avg300=0.00 total=0
Result<Pressure> parsePressure(std::string_view content) {
  Pressure p;
  bool haveSome = false;
  for (std::string_view line : lines(content)) {
    if (line.empty()) continue;
    auto kinded = splitOnce(line, ' ');
    if (!kinded || (kinded->first != "some" && kinded->first != "full")) {
      return parseError("pressure: unexpected line \"" + std::string(line) + "\"");
    }
    const std::string_view kind = kinded->first;
    auto parsed = parseFields(kinded->second, line);
    if (!parsed) return parsed.error();
    if (kind == "some") {
      p.some = *parsed;
      haveSome = true;
    } else {
      p.full = *parsed;
    }
  }
  if (!haveSome) return parseError("pressure: no \"some\" line");
  return p;
}

}  // namespace reclaimd::psi

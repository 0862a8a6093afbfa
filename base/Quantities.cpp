#include "base/Quantities.h"

#include <fmt/format.h>

#include <charconv>
#include <limits>
#include <utility>

namespace reclaimd {

std::optional<std::uint64_t> parseU64(std::string_view text) {
  std::uint64_t value = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (ec != std::errc() || ptr != end || text.empty()) return std::nullopt;
  return value;
}

namespace {

// Splits "128MiB" into "128" and "MiB".
std::pair<std::string_view, std::string_view> splitNumber(std::string_view text) {
  std::size_t i = 0;
  while (i < text.size() && (text[i] >= '0' && text[i] <= '9'))
    ++i;
  return {text.substr(0, i), text.substr(i)};
}

}  // namespace

std::optional<std::uint64_t> parseBytes(std::string_view text) {
  auto [digits, suffix] = splitNumber(text);
  auto number = parseU64(digits);
  if (!number) return std::nullopt;
  std::uint64_t multiplier = 1;
  if (!suffix.empty()) {
    switch (suffix[0]) {
      case 'K':
      case 'k': multiplier = kKiB; break;
      case 'M':
      case 'm': multiplier = kMiB; break;
      case 'G':
      case 'g': multiplier = kGiB; break;
      case 'T':
      case 't': multiplier = kGiB * 1024; break;
      case 'B':
      case 'b': multiplier = 1; break;
      default: return std::nullopt;
    }
    std::string_view rest = suffix.substr(1);
    if (suffix[0] == 'B' || suffix[0] == 'b') {
      if (!rest.empty()) return std::nullopt;
    } else if (!(rest.empty() || rest == "i" || rest == "iB" || rest == "B")) {
      return std::nullopt;
    }
  }
  if (*number > std::numeric_limits<std::uint64_t>::max() / multiplier) return std::nullopt;
  return *number * multiplier;
}

std::optional<std::chrono::milliseconds> parseDuration(std::string_view text) {
  auto [digits, suffix] = splitNumber(text);
  auto number = parseU64(digits);
  if (!number) return std::nullopt;
  std::uint64_t ms_per_unit = 0;
  if (suffix.empty() || suffix == "s")
    ms_per_unit = 1000;
  else if (suffix == "ms")
    ms_per_unit = 1;
  else if (suffix == "m" || suffix == "min")
    ms_per_unit = 60'000;
  else if (suffix == "h")
    ms_per_unit = 3'600'000;
  else
    return std::nullopt;
  // A day in ms fits easily; anything beyond a few years is a typo, not a policy.
  constexpr std::uint64_t kMaxMs = 365ULL * 24 * 3'600'000;
  if (*number > kMaxMs / ms_per_unit) return std::nullopt;
  return std::chrono::milliseconds(*number * ms_per_unit);
}

std::string formatMiB(std::uint64_t bytes) {
  return fmt::format("{:.1f}", static_cast<double>(bytes) / static_cast<double>(kMiB));
}

std::string formatMiBSigned(std::int64_t bytes) {
  return fmt::format("{:.1f}", static_cast<double>(bytes) / static_cast<double>(kMiB));
}

namespace {

// The binary multiples a size is written in, largest first.
struct Multiple {
  std::uint64_t bytes;
  const char* symbol;
};
constexpr Multiple kMultiples[] = {{kGiB * 1024, "TiB"}, {kGiB, "GiB"}, {kMiB, "MiB"}, {kKiB, "KiB"}};

}  // namespace

std::string formatBytes(std::uint64_t bytes) {
  for (const Multiple& m : kMultiples) {
    if (bytes >= m.bytes && bytes % m.bytes == 0) return std::to_string(bytes / m.bytes) + m.symbol;
  }
  for (const Multiple& m : kMultiples) {
    if (bytes >= m.bytes)
      return fmt::format("{:.1f}{}", static_cast<double>(bytes) / static_cast<double>(m.bytes), m.symbol);
  }
  return std::to_string(bytes) + "B";
}

std::string formatSize(std::uint64_t bytes) {
  for (const Multiple& m : kMultiples) {
    if (bytes >= m.bytes)
      return fmt::format("{:.1f} {}", static_cast<double>(bytes) / static_cast<double>(m.bytes), m.symbol);
  }
  return fmt::format("{} B", bytes);
}

std::string formatSizeSigned(std::int64_t bytes) {
  const std::uint64_t magnitude = bytes < 0 ? 0 - static_cast<std::uint64_t>(bytes) : static_cast<std::uint64_t>(bytes);
  return (bytes < 0 ? "-" : "") + formatSize(magnitude);
}

std::string formatDuration(std::chrono::nanoseconds d) {
  using namespace std::chrono;
  if (d < seconds(1)) return fmt::format("{:.3g}ms", duration<double, std::milli>(d).count());
  if (d % seconds(1) == nanoseconds(0)) return fmt::format("{}s", duration_cast<seconds>(d).count());
  // Exact to the millisecond ("471.341s", never a rounded "471s" that would read as another
  // value); the decimal point keeps parseDuration from taking it for a policy value.
  if (d % milliseconds(1) == nanoseconds(0)) {
    const auto ms = duration_cast<milliseconds>(d).count();
    std::string fraction = fmt::format("{:03}", ms % 1000);
    while (fraction.back() == '0')
      fraction.pop_back();
    return fmt::format("{}.{}s", ms / 1000, fraction);
  }
  return fmt::format("{:.6g}s", duration<double>(d).count());
}

}  // namespace reclaimd

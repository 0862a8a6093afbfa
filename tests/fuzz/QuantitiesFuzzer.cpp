// parseU64, parseBytes and parseDuration, and their printers: every value a parser accepts
// prints back to text that parses to the same value, and every value printed exactly (no
// decimal point) parses back. The first eight bytes also go in as a value, so the printers
// are exercised over the whole range and not only on what the parsers happened to accept.
#include <chrono>
#include <cstring>
#include <string>

#include "base/Quantities.h"
#include "tests/fuzz/Check.h"

namespace {

using namespace reclaimd;
using std::chrono::milliseconds;

// The largest duration parseDuration accepts (its documented "a few years is a typo" bound).
constexpr std::uint64_t kMaxMs = 365ULL * 24 * 3'600'000;

void checkBytes(std::uint64_t bytes) {
  FUZZ_CHECK(parseBytes(std::to_string(bytes)) == bytes, "a byte count printed as digits parses back");
  const std::string human = formatBytes(bytes);
  if (human.find('.') == std::string::npos) {
    FUZZ_CHECK(parseBytes(human) == bytes, "formatBytes' exact forms parse back");
  }
  (void)formatMiB(bytes);
  (void)formatMiBSigned(static_cast<std::int64_t>(bytes));
}

void checkDuration(milliseconds d) {
  FUZZ_CHECK(parseDuration(std::to_string(d.count()) + "ms") == d, "a duration printed in ms parses back");
  const std::string human = formatDuration(d);
  // formatDuration prints whole seconds ("120s") and sub-second ms ("250ms") exactly; "1.5s"
  // is for messages only and parseDuration rejects it on purpose.
  if (d < std::chrono::seconds(1) || d % std::chrono::seconds(1) == milliseconds(0)) {
    FUZZ_CHECK(parseDuration(human) == d, "formatDuration's exact forms parse back");
  } else {
    FUZZ_CHECK(!parseDuration(human).has_value(), "a fractional formatDuration is not mistaken for another value");
  }
}

void checkText(std::string_view text) {
  if (auto v = parseU64(text)) FUZZ_CHECK(parseU64(std::to_string(*v)) == v, "parseU64 round trip");
  if (auto b = parseBytes(text)) checkBytes(*b);
  if (auto d = parseDuration(text)) {
    FUZZ_CHECK(d->count() >= 0 && static_cast<std::uint64_t>(d->count()) <= kMaxMs, "durations stay in range");
    checkDuration(*d);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  checkText(fuzz::asText(data, size));
  if (size >= sizeof(std::uint64_t)) {
    std::uint64_t value = 0;
    std::memcpy(&value, data, sizeof value);
    checkBytes(value);
    checkDuration(milliseconds(value % (kMaxMs + 1)));
    (void)formatDuration(std::chrono::nanoseconds(static_cast<std::int64_t>(value)));
  }
  return 0;
}

// PSI pressure files: averages are finite and never negative (the parser promises it), and what parses
// prints back (shortest round-trip doubles) to the same figures.
#include <fmt/format.h>

#include <cmath>
#include <cstring>

#include "psi/Pressure.h"
#include "tests/fuzz/Check.h"

namespace {

using reclaimd::psi::PressureLine;

// Bit-for-bit: a NaN the parser let through must come back as the same NaN.
bool same(double a, double b) {
  return std::memcmp(&a, &b, sizeof a) == 0 || (std::isnan(a) && std::isnan(b));
}

bool same(const PressureLine& a, const PressureLine& b) {
  return same(a.avg10, b.avg10) && same(a.avg60, b.avg60) && same(a.avg300, b.avg300) && a.totalUsec == b.totalUsec;
}

std::string print(const char* kind, const PressureLine& l) {
  // some avg10=0.00 avg60=0.00 avg300=0.00 total=0
  return fmt::format("{} avg10={} avg60={} avg300={} total={}\n", kind, l.avg10, l.avg60, l.avg300, l.totalUsec);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace reclaimd;
  auto p = psi::parsePressure(fuzz::asText(data, size));
  if (!p) return 0;
  for (const PressureLine* l : {&p->some, p->full ? &*p->full : nullptr}) {
    if (!l) continue;
    for (double avg : {l->avg10, l->avg60, l->avg300})
      FUZZ_CHECK(std::isfinite(avg) && avg >= 0, "averages are finite and not negative");
  }
  std::string printed = print("some", p->some);
  if (p->full) printed += print("full", *p->full);
  auto again = psi::parsePressure(printed);
  FUZZ_CHECK(again.ok(), "a printed pressure file parses");
  FUZZ_CHECK(same(again->some, p->some), "the printed some line parses to the same figures");
  FUZZ_CHECK(again->full.has_value() == p->full.has_value(), "a full line comes back when there was one");
  if (p->full) FUZZ_CHECK(same(*again->full, *p->full), "the printed full line parses to the same figures");
  return 0;
}

// /proc/stat's cpu line: what parses prints back, kernel style, to the same times.
#include <fmt/format.h>

#include "proc/ProcStat.h"
#include "tests/fuzz/Check.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace reclaimd;
  auto t = proc::parseProcStat(fuzz::asText(data, size));
  if (!t) return 0;
  // cpu  user nice system idle iowait irq softirq steal
  const std::string printed = fmt::format("cpu  {} {} {} {} {} {} {} {}\n", t->user, t->nice, t->system, t->idle,
                                          t->iowait, t->irq, t->softirq, t->steal);
  auto again = proc::parseProcStat(printed);
  FUZZ_CHECK(again.ok(), "a printed cpu line parses");
  FUZZ_CHECK(again->user == t->user && again->nice == t->nice && again->system == t->system && again->idle == t->idle &&
                 again->iowait == t->iowait && again->irq == t->irq && again->softirq == t->softirq &&
                 again->steal == t->steal,
             "a printed cpu line parses to the same times");
  return 0;
}

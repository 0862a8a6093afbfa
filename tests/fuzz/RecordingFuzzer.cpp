// The recording's parser (controller/record/RecordFormat.h): any line is read without a crash,
// and a line that reads whole writes back to text that reads to the same value again.
#include <string>

#include "controller/record/RecordFormat.h"
#include "tests/fuzz/Check.h"

namespace {

using namespace reclaimd::controller;

// Reads `line` as its kind says, writes the value back; "" when it does not read whole.
std::string roundTrip(const std::string& line) {
  LineReader r(line);
  LineWriter w(r.kind());
  if (r.kind() == "in") {
    writeInput(w, readInput(r));
  } else if (r.kind() == "caps") {
    const std::string why = r.s();
    writeCaps(w.s(why), readCaps(r));
  } else if (r.kind() == "tree" || r.kind() == "meminfo" || r.kind() == "scan") {
    reclaimd::Error e;
    if (!r.okOrError(e)) {
      w.error(e);
    } else if (r.kind() == "tree") {
      writeTree(w.word("ok"), readTree(r));
    } else if (r.kind() == "meminfo") {
      writeMeminfo(w.word("ok"), readMeminfo(r));
    } else {
      writeScan(w.word("ok"), readScan(r));
    }
  } else {
    while (r.more())
      w.s(r.s());
  }
  return r.done() ? w.line() : std::string();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reclaimd::fuzz::asText(data, size));
  std::size_t at = 0;
  while (at <= text.size()) {
    const std::size_t end = std::min(text.find('\n', at), text.size());
    const std::string once = roundTrip(text.substr(at, end - at));
    if (!once.empty()) {
      const std::string twice = roundTrip(once);
      FUZZ_CHECK(twice == once, "a recording line written back reads to the same value");
    }
    at = end + 1;
  }
  // Any string survives the escaping.
  LineWriter w("s");
  w.s(text);
  LineReader r(w.line());
  FUZZ_CHECK(r.s() == text && r.done(), "an escaped string reads back as itself");
  return 0;
}

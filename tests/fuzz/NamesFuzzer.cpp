// The enum-name parsers (log level, mode, idle source): whatever they accept names a value
// whose printed name parses back to it.
#include "base/Log.h"
#include "policies/Policy.h"
#include "tests/fuzz/Check.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace reclaimd;
  const std::string_view text = fuzz::asText(data, size);
  (void)parseLogLevel(text);
  if (auto mode = policies::parseMode(text)) {
    FUZZ_CHECK(policies::parseMode(policies::toString(*mode)) == mode, "a mode's name parses back");
  }
  if (auto source = policies::parseIdleSource(text)) {
    FUZZ_CHECK(policies::parseIdleSource(policies::toString(*source)) == source, "an idle source's name parses back");
  }
  return 0;
}

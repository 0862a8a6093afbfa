// --metrics-listen's request parser, fed whatever a local client sends: it never crashes, a
// request it completes has a method and a target without line breaks, any prefix of a complete
// request is incomplete or refused (never a different request), and every answer is an HTTP/1.1
// status line whose Content-Length is the body's.
#include <string>

#include "controller/operate/Http.h"
#include "tests/fuzz/Check.h"

namespace {

using namespace reclaimd::controller;

void checkResponse(const std::string& r, bool head) {
  FUZZ_CHECK(r.rfind("HTTP/1.1 ", 0) == 0, "an answer starts with an HTTP/1.1 status line");
  const std::size_t end = r.find("\r\n\r\n");
  FUZZ_CHECK(end != std::string::npos, "an answer's headers end with a blank line");
  const std::size_t at = r.find("Content-Length: ");
  if (at == std::string::npos || at > end) return;
  const std::size_t length = std::stoul(r.substr(at + 16));
  if (!head) FUZZ_CHECK(length == r.size() - end - 4, "Content-Length is the body's length");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace reclaimd;
  const std::string_view in = fuzz::asText(data, size);
  auto request = parseHttpRequest(in);
  if (!request) {
    checkResponse(httpBadRequest(), false);
    return 0;
  }
  if (!*request) return 0;
  const HttpRequest& r = **request;
  FUZZ_CHECK(!r.method.empty() && !r.target.empty(), "a request has a method and a target");
  FUZZ_CHECK(r.method.find_first_of("\r\n ") == std::string::npos, "a method has no line break or space");
  FUZZ_CHECK(r.target.find_first_of("\r\n ") == std::string::npos, "a target has no line break or space");
  checkResponse(httpResponse(r, wantsMetrics(r) ? std::string("reclaimd_up 1\n") : std::string()), r.method == "HEAD");
  for (std::size_t cut = 0; cut < in.size(); cut += 1 + cut / 8) {
    auto prefix = parseHttpRequest(in.substr(0, cut));
    if (prefix && *prefix) {
      FUZZ_CHECK((*prefix)->method == r.method && (*prefix)->target == r.target,
                 "a prefix of a request never parses to a different request");
    }
  }
  return 0;
}

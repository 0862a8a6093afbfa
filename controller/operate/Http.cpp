#include "controller/operate/Http.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <algorithm>
#include <cstring>

#include "base/Quantities.h"

namespace reclaimd::controller {

namespace {

Error loopbackError(std::string_view text, const char* what) {
  return invalidError("--metrics-listen " + std::string(text) + ": " + what);
}

std::string respond(const char* status, const char* type, const std::string& body, bool withBody) {
  std::string out = std::string("HTTP/1.1 ") + status + "\r\nContent-Type: " + type +
                    "\r\nContent-Length: " + std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n";
  if (withBody) out += body;
  return out;
}

}  // namespace

Result<LoopbackAddress> parseLoopback(std::string_view text) {
  const std::size_t colon = text.rfind(':');
  if (colon == std::string_view::npos) return loopbackError(text, "expected HOST:PORT");
  std::string host(text.substr(0, colon));
  auto port = parseU64(text.substr(colon + 1));
  if (!port || *port == 0 || *port > 65535) return loopbackError(text, "bad port");
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  if (host == "localhost") host = "127.0.0.1";
  LoopbackAddress out;
  sockaddr_in v4{};
  sockaddr_in6 v6{};
  if (::inet_pton(AF_INET, host.c_str(), &v4.sin_addr) == 1) {
    if ((ntohl(v4.sin_addr.s_addr) >> 24) != 127)
      return loopbackError(text, "only loopback addresses (127.0.0.0/8, ::1)");
    v4.sin_family = AF_INET;
    v4.sin_port = htons(static_cast<std::uint16_t>(*port));
    std::memcpy(&out.addr, &v4, sizeof v4);
    out.length = sizeof v4;
  } else if (::inet_pton(AF_INET6, host.c_str(), &v6.sin6_addr) == 1) {
    if (!IN6_IS_ADDR_LOOPBACK(&v6.sin6_addr)) return loopbackError(text, "only loopback addresses (127.0.0.0/8, ::1)");
    v6.sin6_family = AF_INET6;
    v6.sin6_port = htons(static_cast<std::uint16_t>(*port));
    std::memcpy(&out.addr, &v6, sizeof v6);
    out.length = sizeof v6;
  } else {
    return loopbackError(text, "not an IP address");
  }
  return out;
}

Result<std::optional<HttpRequest>> parseHttpRequest(std::string_view in) {
  // The header block ends at the first empty line, whatever ends each line.
  std::size_t end = std::string_view::npos;
  for (std::size_t nl = in.find('\n'); nl != std::string_view::npos; nl = in.find('\n', nl + 1)) {
    const std::size_t next = nl + 1;
    if (next < in.size() && in[next] == '\n') {
      end = next;
      break;
    }
    if (next + 1 < in.size() && in[next] == '\r' && in[next + 1] == '\n') {
      end = next + 1;
      break;
    }
  }
  if (end == std::string_view::npos) return std::optional<HttpRequest>{};
  std::string_view line = in.substr(0, in.find('\n'));
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  const std::size_t sp1 = line.find(' ');
  const std::size_t sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
  // A request line is printable ASCII (RFC 9112: a target is percent-encoded): a control byte or
  // a raw non-ASCII byte in a method or a target is not a request to answer.
  const bool control = std::any_of(line.begin(), line.end(), [](char c) { return c < 0x20 || c == 0x7f; });
  if (control || sp1 == 0 || sp2 == std::string_view::npos || sp2 == sp1 + 1 ||
      line.substr(sp2 + 1).rfind("HTTP/", 0) != 0) {
    return parseError("HTTP request line");
  }
  return std::optional<HttpRequest>{
      HttpRequest{std::string(line.substr(0, sp1)), std::string(line.substr(sp1 + 1, sp2 - sp1 - 1))}};
}

bool wantsMetrics(const HttpRequest& r) {
  const bool method = r.method == "GET" || r.method == "HEAD";
  return method && (r.target == "/metrics" || r.target.rfind("/metrics?", 0) == 0);
}

std::string httpResponse(const HttpRequest& r, const std::string& metrics) {
  const bool head = r.method == "HEAD";
  if (r.method != "GET" && !head)
    return respond("405 Method Not Allowed\r\nAllow: GET, HEAD", "text/plain", "only GET and HEAD\n", true);
  if (!wantsMetrics(r)) return respond("404 Not Found", "text/plain", "reclaimd: metrics at /metrics\n", !head);
  return respond("200 OK", "text/plain; version=0.0.4; charset=utf-8", metrics, !head);
}

std::string httpBadRequest() {
  return respond("400 Bad Request", "text/plain", "bad request\n", true);
}

}  // namespace reclaimd::controller

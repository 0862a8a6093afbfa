// The little HTTP that /metrics needs: the loopback address to listen on, the request line of
// a GET or HEAD, and the answer. Pure functions; Endpoints does the sockets.
#pragma once

#include <sys/socket.h>

#include <optional>
#include <string>
#include <string_view>

#include "base/Result.h"

namespace reclaimd::controller {

struct LoopbackAddress {
  sockaddr_storage addr{};
  socklen_t length = 0;
};

// "127.0.0.1:9101", "[::1]:9101" or "localhost:9101". Anything that is not loopback is an
// error: the metrics endpoint never listens where other machines can reach it.
Result<LoopbackAddress> parseLoopback(std::string_view text);

struct HttpRequest {
  std::string method;  // "GET", "HEAD", ...
  std::string target;  // "/metrics", "/metrics?x", ...
};

// The request in `in` once its header block has ended (a blank line, CRLF or bare LF: both are
// seen in the wild and RFC 9112 asks servers to accept LF); nullopt while more is to come. A
// request line that is not "METHOD TARGET VERSION" is a parse error.
Result<std::optional<HttpRequest>> parseHttpRequest(std::string_view in);

// True when the request asks for the metrics (so the caller renders them, and only then).
bool wantsMetrics(const HttpRequest& request);

// The whole response: 200 with `metrics` for GET and HEAD of /metrics (HEAD: headers only,
// with the Content-Length a GET would have), 404 for other targets, 405 for other methods.
std::string httpResponse(const HttpRequest& request, const std::string& metrics);
// 400 for a request that cannot be parsed.
std::string httpBadRequest();

}  // namespace reclaimd::controller

// --metrics-listen: whatever parseLoopback accepts is a loopback address with a real port, and
// prints back (inet_ntop) to the same socket address.
#include <arpa/inet.h>
#include <netinet/in.h>

#include <cstring>
#include <string>

#include "controller/operate/Endpoints.h"
#include "tests/fuzz/Check.h"

namespace {

using reclaimd::controller::LoopbackAddress;

std::string print(const LoopbackAddress& a) {
  char host[INET6_ADDRSTRLEN] = {};
  if (a.addr.ss_family == AF_INET) {
    sockaddr_in v4{};
    std::memcpy(&v4, &a.addr, sizeof v4);
    ::inet_ntop(AF_INET, &v4.sin_addr, host, sizeof host);
    return std::string(host) + ":" + std::to_string(ntohs(v4.sin_port));
  }
  sockaddr_in6 v6{};
  std::memcpy(&v6, &a.addr, sizeof v6);
  ::inet_ntop(AF_INET6, &v6.sin6_addr, host, sizeof host);
  return "[" + std::string(host) + "]:" + std::to_string(ntohs(v6.sin6_port));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace reclaimd;
  auto a = controller::parseLoopback(fuzz::asText(data, size));
  if (!a) return 0;
  if (a->addr.ss_family == AF_INET) {
    sockaddr_in v4{};
    std::memcpy(&v4, &a->addr, sizeof v4);
    FUZZ_CHECK(a->length == sizeof v4, "an IPv4 address has the IPv4 length");
    FUZZ_CHECK((ntohl(v4.sin_addr.s_addr) >> 24) == 127, "only 127.0.0.0/8 is accepted");
    FUZZ_CHECK(v4.sin_port != 0, "the port is not 0");
  } else {
    FUZZ_CHECK(a->addr.ss_family == AF_INET6, "IPv4 or IPv6 only");
    sockaddr_in6 v6{};
    std::memcpy(&v6, &a->addr, sizeof v6);
    FUZZ_CHECK(a->length == sizeof v6, "an IPv6 address has the IPv6 length");
    FUZZ_CHECK(IN6_IS_ADDR_LOOPBACK(&v6.sin6_addr), "only ::1 is accepted");
    FUZZ_CHECK(v6.sin6_port != 0, "the port is not 0");
  }
  auto again = controller::parseLoopback(print(*a));
  FUZZ_CHECK(again.ok(), "a printed address parses");
  FUZZ_CHECK(again->length == a->length && std::memcmp(&again->addr, &a->addr, a->length) == 0,
             "a printed address parses to the same socket address");
  return 0;
}

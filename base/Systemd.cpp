#include "base/Systemd.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "base/UniqueFd.h"

namespace reclaimd {

namespace {

// An AF_UNIX address for `path`; '@' starts an abstract-namespace name, as systemd writes it.
std::optional<std::pair<sockaddr_un, socklen_t>> unixAddress(std::string_view path) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.empty() || path.size() >= sizeof addr.sun_path) return std::nullopt;
  std::memcpy(addr.sun_path, path.data(), path.size());
  if (path[0] == '@') addr.sun_path[0] = '\0';
  const auto length = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + path.size() + (path[0] == '@' ? 0 : 1));
  return std::pair(addr, length);
}

Result<void> sendDatagram(std::string_view path, std::string_view data) {
  auto addr = unixAddress(path);
  if (!addr) return errnoError(EINVAL, "socket path " + std::string(path));
  UniqueFd fd(::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  if (!fd) return errnoError(errno, "socket");
  const ssize_t sent = ::sendto(fd.get(), data.data(), data.size(), MSG_NOSIGNAL,
                                reinterpret_cast<const sockaddr*>(&addr->first), addr->second);
  if (sent < 0) return errnoError(errno, "send to " + std::string(path));
  if (static_cast<std::size_t>(sent) != data.size()) return errnoError(EMSGSIZE, "send to " + std::string(path));
  return {};
}

// The variable's value as a number; nullopt when it is not set.
Result<std::optional<std::uint64_t>> envNumber(const char* name) {
  const char* text = std::getenv(name);
  if (text == nullptr) return std::optional<std::uint64_t>();
  std::uint64_t value = 0;
  const auto [end, ec] = std::from_chars(text, text + std::strlen(text), value);
  if (ec != std::errc() || *end != '\0')
    return parseError(std::string(name) + "=" + text + ": not a decimal number");
  return std::optional<std::uint64_t>(value);
}

}  // namespace

Result<bool> sdNotify(std::string_view state) {
  const char* socket = std::getenv("NOTIFY_SOCKET");
  if (socket == nullptr || *socket == '\0') return false;
  if (auto sent = sendDatagram(socket, state); !sent) return sent.error();
  return true;
}

Result<std::optional<std::chrono::microseconds>> sdWatchdog() {
  using Interval = std::optional<std::chrono::microseconds>;
  const auto usec = envNumber("WATCHDOG_USEC");
  if (!usec) return usec.error();
  if (!*usec || **usec == 0) return Interval();
  const auto pid = envNumber("WATCHDOG_PID");
  if (!pid) return pid.error();
  // The variables were inherited from a parent the watchdog is meant for, not this process.
  if (*pid && **pid != static_cast<std::uint64_t>(::getpid())) return Interval();
  // Held where it still fits int64 nanoseconds (292 years), as the loop counts time: a longer
  // interval is as good as that one.
  const auto bounded = std::min<std::uint64_t>(**usec, static_cast<std::uint64_t>(INT64_MAX) / 1000);
  return Interval(std::chrono::microseconds(static_cast<std::int64_t>(bounded)));
}

Result<void> journalSend(const std::vector<std::string>& fields) {
  std::string entry;
  for (const std::string& f : fields) {
    const auto eq = f.find('=');
    if (eq == std::string::npos) continue;
    if (f.find('\n') == std::string::npos) {
      entry += f;
      entry += '\n';
      continue;
    }
    // KEY\n, the value's length as 64-bit little-endian, the value, \n.
    entry.append(f, 0, eq);
    entry += '\n';
    std::uint64_t length = f.size() - eq - 1;
    for (int i = 0; i < 8; ++i)
      entry += static_cast<char>((length >> (8 * i)) & 0xFF);
    entry.append(f, eq + 1);
    entry += '\n';
  }
  return sendDatagram("/run/systemd/journal/socket", entry);
}

}  // namespace reclaimd

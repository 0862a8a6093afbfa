// `reclaimd status`: connects to the daemon's socket and prints what it says. The daemon
// answers JSON (formatStatusJson); the text is rendered here from it, so both forms say the
// same. A daemon that answers text (before the JSON protocol) is printed as it is.
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <iostream>

#include "base/UniqueFd.h"
#include "controller/ExitCodes.h"
#include "controller/cli/Commands.h"
#include "controller/cli/Complain.h"
#include "controller/operate/Status.h"

namespace reclaimd::controller {

namespace {

// The exit code and message for a failed connect: permission is not absence.
int connectFailed(const std::string& socketPath, const Error& error) {
  if (error.errnoValue() == EACCES || error.errnoValue() == EPERM) {
    complain("permission denied on " + socketPath + ": only root may ask reclaimd for its status");
    return kExitNoPermission;
  }
  complain("the daemon is not running, or not reachable: " + error.message());
  return kExitUnavailable;
}

Result<UniqueFd> connectTo(const std::string& socketPath, const sockaddr_un& addr) {
  UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd) return errnoError(errno, "socket for " + socketPath);
  if (::connect(fd.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0)
    return errnoError(errno, "connect to " + socketPath);
  // Answers come at once; a daemon that does not answer within the readiness probe's 5 s is
  // reported, not waited on forever, so a socket that takes no timeout is not read at all.
  timeval timeout{5, 0};
  if (::setsockopt(fd.get(), SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout) != 0)
    return errnoError(errno, "set a read timeout on " + socketPath);
  return fd;
}

Result<std::string> readAll(int fd, const std::string& socketPath) {
  std::string text;
  char buf[4096];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n == 0) return text;
    if (n < 0) return errnoError(errno, "read the status from " + socketPath);
    text.append(buf, static_cast<std::size_t>(n));
  }
}

}  // namespace

int commandStatus(const std::string& socketPath, bool json) {
  sockaddr_un addr{};
  if (socketPath.size() >= sizeof addr.sun_path) {
    complain("status socket path too long: " + socketPath);
    return kExitUsage;
  }
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, socketPath.c_str(), socketPath.size() + 1);
  auto fd = connectTo(socketPath, addr);
  if (!fd) return connectFailed(socketPath, fd.error());
  auto answer = readAll(fd->get(), socketPath);
  if (!answer) {
    complain(answer.error().message());
    return kExitFailure;
  }
  const std::string& text = *answer;
  if (text.empty()) {
    complain("the daemon at " + socketPath + " closed without an answer (only root may ask)");
    return kExitNoPermission;
  }
  if (text.front() != '{') {
    if (json) {
      complain("the daemon at " + socketPath + " answers text only (an older version)");
      return kExitFailure;
    }
    std::cout << text;
    return kExitOk;
  }
  if (json) {
    std::cout << text;
    return kExitOk;
  }
  auto status = parseStatusJson(text);
  if (!status) {
    complain("the answer from " + socketPath + ": " + status.error().message());
    return kExitFailure;
  }
  std::cout << formatStatus(*status);
  return kExitOk;
}

}  // namespace reclaimd::controller

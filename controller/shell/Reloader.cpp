#include "controller/shell/Reloader.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <system_error>

namespace reclaimd::controller {

namespace {

void signal(int fd) {
  const std::uint64_t one = 1;
  // EAGAIN only when the counter is full, and then the fd is readable anyway.
  [[maybe_unused]] const ssize_t n = ::write(fd, &one, sizeof one);
}

}  // namespace

Result<void> Reloader::open() {
  ready_.reset(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
  if (!ready_) return errnoError(errno, "eventfd for the policy reload");
  cancel_.reset(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
  if (!cancel_) return errnoError(errno, "eventfd for the policy reload");
  return {};
}

Reloader::~Reloader() {
  if (!worker_.joinable()) return;
  signal(cancel_.get());
  worker_.join();
}

std::optional<Result<policies::Policy>> Reloader::cancel() {
  again_ = false;
  if (!worker_.joinable()) return std::nullopt;
  signal(cancel_.get());
  worker_.join();
  return take();
}

Result<void> Reloader::request() {
  if (busy()) {
    again_ = true;
    return {};
  }
  return start();
}

Result<void> Reloader::start() {
  try {
    worker_ = std::thread([this] {
      auto loaded = load_(cancel_.get());
      {
        const std::lock_guard<std::mutex> lock(mutex_);
        result_.emplace(std::move(loaded));
      }
      signal(ready_.get());
    });
  } catch (const std::system_error& e) {
    return errnoError(e.code().value(), "start the policy reload's thread");
  }
  return {};
}

std::optional<Result<policies::Policy>> Reloader::take() {
  std::uint64_t count = 0;
  while (::read(ready_.get(), &count, sizeof count) > 0) {
  }
  std::optional<Result<policies::Policy>> taken;
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    taken.swap(result_);
  }
  if (!taken) return std::nullopt;
  if (worker_.joinable()) worker_.join();  // it has stored its result: it is ending
  if (again_) {
    again_ = false;
    // A coalesced load that cannot start is reported as its result, at the next take().
    if (auto started = start(); !started) {
      const std::lock_guard<std::mutex> lock(mutex_);
      result_.emplace(started.error());
      signal(ready_.get());
    }
  }
  return taken;
}

}  // namespace reclaimd::controller

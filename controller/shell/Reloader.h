// The policy reload off the loop. Reading and parsing a policy (the bounded check of
// policies/Guard.h in a child, then the parse itself) takes most of a second for a 1 MiB file;
// a worker thread does it while the loop goes on ticking and answering status and metrics, and
// the loop applies the result when readyFd() says it is there. A request while a load runs
// coalesces into one more load after it: however many SIGHUPs came meanwhile, the policy applied
// last is read after the last of them.
#pragma once

#include <functional>
#include <mutex>
#include <optional>
#include <thread>

#include "base/Result.h"
#include "base/UniqueFd.h"
#include "policies/Policy.h"

namespace reclaimd::controller {

class Reloader {
 public:
  // Reads and parses the policy, in the worker thread. `cancelFd` becomes readable when the
  // reloader is destroyed: a load that waits on something should give up then (ParseGuard's
  // cancelFd).
  using Load = std::function<Result<policies::Policy>(int cancelFd)>;

  explicit Reloader(Load load) : load_(std::move(load)) {}
  Reloader(const Reloader&) = delete;
  Reloader& operator=(const Reloader&) = delete;
  // Cancels a running load and waits for its thread.
  ~Reloader();

  // Creates the eventfds; call once before request(). Errors: the eventfd errno.
  Result<void> open();
  // Readable when a load has finished: then call take().
  int readyFd() const { return ready_.get(); }
  // Starts a load, or, when one runs, asks for one more after it. Errors: the thread could not
  // be started (std::system_error's text); nothing runs then.
  Result<void> request();
  // The finished load's result, or nothing when none has finished (a spurious wake-up). Starts
  // the coalesced load, if one was asked for; busy() then says so.
  std::optional<Result<policies::Policy>> take();
  // Cancels a running load (its cancelFd becomes readable), waits for it, and returns its
  // result; nothing when no load ran. No coalesced load follows.
  std::optional<Result<policies::Policy>> cancel();
  // A load runs, or its result waits for take().
  bool busy() const { return worker_.joinable(); }

 private:
  Result<void> start();

  Load load_;
  UniqueFd ready_, cancel_;
  std::thread worker_;
  bool again_ = false;
  std::mutex mutex_;  // guards result_
  std::optional<Result<policies::Policy>> result_;
};

}  // namespace reclaimd::controller

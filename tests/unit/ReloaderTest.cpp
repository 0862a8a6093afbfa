// The policy reload off the loop (controller/shell/Reloader.h), with loads that block until the
// test lets them go: the loop goes on dispatching meanwhile, requests made during a load
// coalesce into one more, a failed load arrives as its error, and a cancel ends a waiting load.
#include "controller/shell/Reloader.h"

#include <gtest/gtest.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <future>
#include <string>
#include <vector>

#include "base/UniqueFd.h"
#include "controller/shell/Loop.h"

namespace reclaimd::controller {
namespace {

using namespace std::chrono_literals;

// A load that waits for release() (or gives up after a bound, so that a loop blocked by the
// load fails the test instead of hanging it), then returns a policy whose floor counts the loads.
class GatedLoad {
 public:
  Reloader::Load load() {
    return [this](int) -> Result<policies::Policy> {
      const int n = ++calls_;
      if (n == 1 && gate_.wait_for(30s) != std::future_status::ready) return invalidError("never released");
      policies::Policy p;
      p.reclaim.floor = static_cast<std::uint64_t>(n);
      return p;
    };
  }
  void release() { open_.set_value(); }
  int calls() const { return calls_; }

 private:
  std::promise<void> open_;
  std::shared_future<void> gate_ = open_.get_future().share();
  std::atomic<int> calls_{0};
};

void write1(int fd) {
  const std::uint64_t one = 1;
  ASSERT_EQ(::write(fd, &one, sizeof one), static_cast<ssize_t>(sizeof one));
}

bool waitReadable(int fd) {
  pollfd p{fd, POLLIN, 0};
  return ::poll(&p, 1, 30'000) == 1;
}

TEST(Reloader, TheLoopGoesOnWhileAPolicyLoads) {
  GatedLoad gated;
  Reloader reloader(gated.load());
  ASSERT_TRUE(reloader.open());
  auto loop = Loop::create();
  ASSERT_TRUE(loop);
  UniqueFd tick(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
  std::vector<std::string> order;
  int ticks = 0;
  // Each tick asks for the next; the third lets the load finish.
  ASSERT_TRUE(loop->add(
      tick.get(),
      [&] {
        std::uint64_t n = 0;
        ASSERT_EQ(::read(tick.get(), &n, sizeof n), static_cast<ssize_t>(sizeof n));
        order.push_back("tick");
        if (++ticks < 3) write1(tick.get());
        if (ticks == 3) gated.release();
      },
      1));
  ASSERT_TRUE(loop->add(
      reloader.readyFd(),
      [&] {
        auto loaded = reloader.take();
        if (!loaded) return;
        order.push_back(*loaded ? "applied" : (*loaded).error().message());
        loop->stop();
      },
      2));
  ASSERT_TRUE(reloader.request());
  write1(tick.get());
  ASSERT_TRUE(loop->run());
  EXPECT_EQ(order, (std::vector<std::string>{"tick", "tick", "tick", "applied"}));
}

TEST(Reloader, RequestsDuringALoadCoalesceIntoOneMore) {
  GatedLoad gated;
  Reloader reloader(gated.load());
  ASSERT_TRUE(reloader.open());
  ASSERT_TRUE(reloader.request());
  ASSERT_TRUE(reloader.request());
  ASSERT_TRUE(reloader.request());
  EXPECT_TRUE(reloader.busy());
  EXPECT_FALSE(reloader.take()) << "nothing has finished yet";
  gated.release();
  ASSERT_TRUE(waitReadable(reloader.readyFd()));
  auto first = reloader.take();
  ASSERT_TRUE(first && *first);
  EXPECT_EQ((*first)->reclaim.floor, 1u);
  EXPECT_TRUE(reloader.busy()) << "the coalesced load follows";
  ASSERT_TRUE(waitReadable(reloader.readyFd()));
  auto second = reloader.take();
  ASSERT_TRUE(second && *second);
  EXPECT_EQ((*second)->reclaim.floor, 2u) << "read after the last request";
  EXPECT_FALSE(reloader.busy());
  EXPECT_EQ(gated.calls(), 2);
}

TEST(Reloader, AFailedLoadArrivesAsItsError) {
  Reloader reloader([](int) -> Result<policies::Policy> { return invalidError("policy.yaml: line 3: bad key"); });
  ASSERT_TRUE(reloader.open());
  ASSERT_TRUE(reloader.request());
  ASSERT_TRUE(waitReadable(reloader.readyFd()));
  auto loaded = reloader.take();
  ASSERT_TRUE(loaded);
  ASSERT_FALSE(*loaded);
  EXPECT_NE(loaded->error().message().find("line 3: bad key"), std::string::npos);
  EXPECT_FALSE(reloader.busy());
}

// A load that waits on its cancel fd, as the bounded parse does.
Result<policies::Policy> waitForCancel(int cancelFd) {
  if (!waitReadable(cancelFd)) return invalidError("never cancelled");
  return errnoError(ECANCELED, "the policy check (stopping)");
}

TEST(Reloader, CancelEndsAWaitingLoadWithItsError) {
  Reloader reloader(waitForCancel);
  ASSERT_TRUE(reloader.open());
  ASSERT_TRUE(reloader.request());
  ASSERT_TRUE(reloader.request());  // no load follows a cancel
  auto left = reloader.cancel();
  ASSERT_TRUE(left);
  ASSERT_FALSE(*left);
  EXPECT_NE(left->error().message().find("(stopping)"), std::string::npos);
  EXPECT_FALSE(reloader.busy());
  EXPECT_FALSE(reloader.cancel()) << "nothing runs any more";
}

}  // namespace
}  // namespace reclaimd::controller

// A parse with a bound on its cost. yaml-cpp 0.7 (Debian bookworm's) can loop forever,
// allocating nodes, on some malformed input: fuzz_policy found the 8 bytes ",a-\n  b\n". The
// parse is first tried in a forked child under a CPU-time (and, without a sanitizer,
// address-space) limit, and done here only when the child finished: parsing is deterministic, so
// then it finishes here too. Only for single-threaded callers (the fuzz target): the daemon's
// logger thread may hold a lock at the fork (under ASan, the allocator's: seen in the unit
// tests), and a deadlocked child uses no CPU, so no CPU limit ends it. The daemon's own guard
// against this yaml-cpp loop is still to be built (a fresh process, not a fork).
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>

#include "policies/Loader.h"

namespace reclaimd::policies {

namespace {

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kSanitized = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif
#else
constexpr bool kSanitized = false;
#endif

// A 1 MiB policy at the rule limit parses in well under 0.3 s of CPU; a runaway parse allocates
// about a GiB a second.
constexpr rlim_t kCpuSeconds = 2;
constexpr rlim_t kAddressSpace = 2ULL << 30;

[[noreturn]] void tryInChild(const std::vector<PolicyText>& files) {
  // The daemon blocks its signals (they reach it through a signalfd): the child takes the
  // defaults, so the CPU limit's SIGXCPU ends it.
  sigset_t none;
  sigemptyset(&none);
  (void)sigprocmask(SIG_SETMASK, &none, nullptr);
  (void)std::signal(SIGXCPU, SIG_DFL);
  const rlimit cpu{kCpuSeconds, kCpuSeconds + 1};
  (void)setrlimit(RLIMIT_CPU, &cpu);
  if (!kSanitized) {
    const rlimit as{kAddressSpace, kAddressSpace};
    (void)setrlimit(RLIMIT_AS, &as);
  }
  (void)parsePolicyFiles(files);
  _exit(0);
}

}  // namespace

Result<Policy> parsePolicyBounded(const std::vector<PolicyText>& files) {
  const pid_t pid = ::fork();
  if (pid < 0) return errnoError(errno, "fork to parse the policy under a bound");
  if (pid == 0) tryInChild(files);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return errnoError(errno, "wait for the policy parse");
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    const std::string where = files.empty() ? "policy" : files.front().source;
    return invalidError(where + ": the YAML reader did not finish within " + std::to_string(kCpuSeconds) +
                        " s of CPU time (malformed YAML that makes yaml-cpp loop); the file is refused");
  }
  return parsePolicyFiles(files);
}

}  // namespace reclaimd::policies

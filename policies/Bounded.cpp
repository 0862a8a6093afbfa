// A parse with a bound on its cost, by fork: for single-threaded callers only (the fuzz target).
// The daemon and check-config use a fresh process instead (Guard.h): in the daemon the logger
// thread may hold a lock at the fork (under ASan, the allocator's: seen in the unit tests), and a
// deadlocked child uses no CPU, so no CPU limit ends it. The child's limits and the reading of its
// end are Guard.h's, so both paths refuse the same inputs with the same words.
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>

#include "policies/Guard.h"
#include "policies/Loader.h"

namespace reclaimd::policies {

namespace {

[[noreturn]] void tryInChild(const std::vector<PolicyText>& files) {
  // The caller may block signals: the child takes the defaults, so the CPU limit's SIGXCPU ends it.
  sigset_t none;
  sigemptyset(&none);
  // Neither fails for a valid set and signal; were SIGXCPU still blocked, the CPU limit's hard
  // SIGKILL (one second later) ends the child all the same, ignoring.
  (void)sigprocmask(SIG_SETMASK, &none, nullptr);
  (void)std::signal(SIGXCPU, SIG_DFL);
  limitParseResources();
  // The result is the parent's to compute from the same bytes: the child only shows that the
  // parse ends within the limits.
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
  if (auto finished = judgeParseEnd(status, files.empty() ? "policy" : files.front().source); !finished)
    return finished.error();
  return parsePolicyFiles(files);
}

}  // namespace reclaimd::policies

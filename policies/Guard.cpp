// The parent's side of the bounded parse (Guard.h): start the child, wait for it, judge its end.
#include "policies/Guard.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "base/UniqueFd.h"
#include "base/Quantities.h"

namespace reclaimd::policies {

using std::chrono::milliseconds;
using std::chrono::steady_clock;

namespace {

// The text on an unlinked in-memory file at offset 0: the child reads it at its own pace, so the
// parent never blocks writing a megabyte into a pipe.
Result<UniqueFd> inputFile(const std::vector<PolicyText>& files) {
  UniqueFd fd(::memfd_create("reclaimd-policy", MFD_CLOEXEC));
  if (!fd) return errnoError(errno, "memfd_create for the policy check");
  const std::string data = encodePolicyTexts(files);
  for (std::size_t done = 0; done < data.size();) {
    const ssize_t n = ::write(fd.get(), data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errnoError(errno, "write the policy check's input");
    done += static_cast<std::size_t>(n);
  }
  if (::lseek(fd.get(), 0, SEEK_SET) != 0) return errnoError(errno, "rewind the policy check's input");
  return fd;
}

// posix_spawn's settings, freed when they go out of scope.
struct Spawn {
  posix_spawn_file_actions_t actions{};
  posix_spawnattr_t attr{};
  Spawn() {
    posix_spawn_file_actions_init(&actions);
    posix_spawnattr_init(&attr);
  }
  ~Spawn() {
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attr);
  }
  Spawn(const Spawn&) = delete;
  Spawn& operator=(const Spawn&) = delete;
};

// Starts the child with `input` as its stdin and `marks` as its stdout (stderr stays: a
// sanitizer's report belongs in the caller's log). Nothing else is inherited.
Result<pid_t> startChild(const ParseGuard& guard, int input, int marks) {
  Spawn s;
  posix_spawn_file_actions_adddup2(&s.actions, input, 0);
  posix_spawn_file_actions_adddup2(&s.actions, marks, 1);
  posix_spawn_file_actions_addclosefrom_np(&s.actions, 3);
  // The daemon blocks its signals (they reach it through a signalfd) and ignores SIGPIPE; masks
  // and ignored signals survive exec. The child takes the defaults, so SIGXCPU ends it.
  sigset_t none, defaults;
  sigemptyset(&none);
  sigemptyset(&defaults);
  for (int sig : {SIGXCPU, SIGPIPE, SIGTERM, SIGINT, SIGHUP})
    sigaddset(&defaults, sig);
  posix_spawnattr_setsigmask(&s.attr, &none);
  posix_spawnattr_setsigdefault(&s.attr, &defaults);
  posix_spawnattr_setflags(&s.attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  std::string name = "reclaimd", sub(kParseSubcommand);
  char* argv[] = {name.data(), sub.data(), nullptr};
  pid_t pid = -1;
  // glibc's posix_spawn reports an exec failure (ENOENT, EACCES) here, as well as EAGAIN/ENOMEM.
  if (const int err = ::posix_spawn(&pid, guard.program.c_str(), &s.actions, &s.attr, argv, environ); err != 0)
    return errnoError(err, "start the policy check " + guard.program + " " + sub);
  return pid;
}

// The child's waitpid status. Errors: the waitpid errno (ECHILD when SIGCHLD is ignored and the
// kernel reaped the child itself: how it ended is then unknown, never taken for a success).
Result<int> reap(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return errnoError(errno, "wait for the policy check");
  }
  return status;
}

enum class Wait { Exited, TimedOut, Cancelled };

// How far the child got, from its marks.
struct Progress {
  std::size_t stages = 0;
  bool done = false;
};

// Waits until the child closes its stdout (it exits), reading its marks.
Wait waitChild(const ParseGuard& guard, int fd, Progress& progress) {
  const auto deadline = steady_clock::now() + guard.wall;
  for (;;) {
    const auto left = std::chrono::duration_cast<milliseconds>(deadline - steady_clock::now());
    if (left.count() <= 0) return Wait::TimedOut;
    pollfd fds[2] = {{fd, POLLIN, 0}, {guard.cancelFd, POLLIN, 0}};
    const int n = ::poll(fds, guard.cancelFd >= 0 ? 2 : 1, static_cast<int>(left.count()) + 1);
    if (n < 0 && errno != EINTR) return Wait::TimedOut;  // cannot happen with valid fds; never hang
    if (n <= 0) continue;
    if (guard.cancelFd >= 0 && (fds[1].revents & POLLIN)) return Wait::Cancelled;
    char buffer[512];
    const ssize_t got = ::read(fd, buffer, sizeof buffer);
    if (got == 0) return Wait::Exited;
    for (ssize_t i = 0; i < got; ++i) {
      progress.stages += buffer[i] == kStageMark ? 1 : 0;
      progress.done = progress.done || buffer[i] == kDoneMark;
    }
  }
}

// The file the child was reading: stage i <= n is file i-1's YAML, stage n+1 the merged policy
// (named by the main file, as before any stage).
std::string culprit(const std::vector<PolicyText>& files, const Progress& progress) {
  if (progress.stages == 0 || progress.stages > files.size()) return files.front().source;
  return files[progress.stages - 1].source;
}

}  // namespace

Result<void> judgeParseEnd(int waitStatus, const std::string& culprit) {
  const std::string refused = "; the file is refused";
  if (WIFEXITED(waitStatus)) {
    const int code = WEXITSTATUS(waitStatus);
    if (code == 0) return {};
    if (code == kParseChildOutOfMemory) {
      return invalidError(culprit + ": the YAML reader needed more than " + formatBytes(kParseMemoryBytes) +
                          " of memory (malformed YAML that makes yaml-cpp loop)" + refused);
    }
    return errnoError(EPROTO, "the policy check of " + culprit + " exited with status " + std::to_string(code));
  }
  const int sig = WIFSIGNALED(waitStatus) ? WTERMSIG(waitStatus) : 0;
  if (sig == SIGXCPU || sig == SIGKILL) {
    return invalidError(culprit + ": the YAML reader did not finish within " + std::to_string(kParseCpuLimit.count()) +
                        " s of CPU (malformed YAML that makes yaml-cpp loop)" + refused);
  }
  // A crash in the child is a crash the caller's own parse would have.
  return invalidError(culprit + ": the YAML reader crashed (" +
                      std::string(sigabbrev_np(sig) ? sigabbrev_np(sig) : "?") + ")" + refused);
}

Result<void> checkParseFinishes(const std::vector<PolicyText>& files, const ParseGuard& guard) {
  std::size_t bytes = 0;
  for (const PolicyText& f : files)
    bytes += f.text.size();
  // parsePolicyFiles refuses these by their size before the YAML reader sees them.
  if (files.empty() || bytes > kMaxPolicyBytes) return {};
  auto input = inputFile(files);
  if (!input) return input.error();
  int ends[2];
  if (::pipe2(ends, O_CLOEXEC) != 0) return errnoError(errno, "pipe for the policy check");
  UniqueFd marks(ends[0]), marksEnd(ends[1]);
  auto pid = startChild(guard, input->get(), marksEnd.get());
  if (!pid) return pid.error();
  marksEnd.reset();  // the child's copy is the only one: its exit ends the pipe
  Progress progress;
  const Wait waited = waitChild(guard, marks.get(), progress);
  if (waited != Wait::Exited) ::kill(*pid, SIGKILL);
  auto reaped = reap(*pid);
  if (!reaped) return reaped.error();
  const int status = *reaped;
  switch (waited) {
    case Wait::Exited:
      // Exit 0 counts only from a child that said its parse returned: any other program (or an
      // older reclaimd without the subcommand) must not vouch for a parse it never did.
      if (WIFEXITED(status) && WEXITSTATUS(status) == 0 && !progress.done) {
        return errnoError(EPROTO, "the policy check " + guard.program + " " + std::string(kParseSubcommand) +
                                      " exited without parsing " + files.front().source);
      }
      return judgeParseEnd(status, culprit(files, progress));
    case Wait::TimedOut:
      return invalidError(culprit(files, progress) + ": the YAML reader did not finish within " +
                          formatDuration(guard.wall) + " (malformed YAML that makes yaml-cpp loop, or a machine " +
                          "too loaded to parse it); the file is refused");
    case Wait::Cancelled: return errnoError(ECANCELED, "the policy check of " + files.front().source + " (stopping)");
  }
  return {};
}

Result<Policy> loadPolicyFileGuarded(const std::string& path, const ParseGuard& guard) {
  auto files = readPolicyFiles(path);
  if (!files) return files.error();
  if (auto finished = checkParseFinishes(*files, guard); !finished) return finished.error();
  return parsePolicyFiles(*files);
}

}  // namespace reclaimd::policies

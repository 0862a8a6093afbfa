// The YAML reader under a bound, in a fresh process.
//
// yaml-cpp 0.7 (Debian bookworm's) loops forever, allocating, on some malformed input (fuzz_policy
// found the 8 bytes ",a-\n  b\n"). Before check-config or the daemon (at start and on SIGHUP)
// parses policy text, a fresh copy of this binary parses the same bytes under a CPU-time,
// address-space and wall-clock limit, and the caller parses them itself only when that child
// finished: parsing is deterministic, so it then finishes here too. The child is started with
// posix_spawn (vfork + exec: no copy of another thread's held lock, unlike fork in the threaded
// daemon) and gets the text on its stdin, as the caller read it: it parses exactly the bytes the
// caller will use.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/Result.h"
#include "policies/Loader.h"
#include "policies/Policy.h"

namespace reclaimd::policies {

// The hidden subcommand that runs parsePolicyChild: `reclaimd __parse-policy`.
inline constexpr std::string_view kParseSubcommand = "__parse-policy";
// A 1 MiB policy at the rule limit parses in well under 0.3 s of CPU; a runaway parse is refused
// after 2 s (SIGXCPU; the hard limit one second later is SIGKILL).
inline constexpr std::chrono::seconds kParseCpuLimit{2};
// The wall-clock bound on the whole check: the CPU limit plus room for a loaded machine (on 2
// cores shared with four builds a legitimate parse still gets a core for more than 2 s in 5).
inline constexpr std::chrono::seconds kParseWallLimit{5};
// A runaway parse allocates about a GiB a second; a 1 MiB policy needs far less (see Guard.cpp).
// Not applied under AddressSanitizer, which reserves terabytes of address space for its shadow.
inline constexpr std::uint64_t kParseMemoryBytes = 2ULL << 30;
// The child's exit status when an allocation failed under kParseMemoryBytes.
inline constexpr int kParseChildOutOfMemory = 3;
// The child's exit status when its stdin was not encodePolicyTexts' form.
inline constexpr int kParseChildBadInput = 4;

struct ParseGuard {
  // The binary whose kParseSubcommand runs parsePolicyChild. /proc/self/exe is this process's own
  // binary, even after a package upgrade replaced the file (the link names the running inode).
  // It is the one procfs path that must not follow --proc-root, which names the machine's files.
  std::string program = "/proc/self/exe";
  std::chrono::milliseconds wall = kParseWallLimit;
  // When this fd is readable the check gives up at once (the child is killed): the daemon passes
  // a signalfd for SIGTERM and SIGINT, so a stop is answered during a reload. -1: none.
  int cancelFd = -1;
};

// Parses `files` in a fresh process (guard.program kParseSubcommand) and waits for it within
// guard.wall. Returns ok when the YAML reader finished there, valid policy or not. Errors:
// - Errc::Invalid naming the file being read when the child was stopped: "<path>: the YAML reader
//   did not finish within 2 s of CPU" (or within guard.wall, or within the memory limit, or it
//   crashed): the text must be refused;
// - an errno error when the check itself could not be done: the memfd, pipe or spawn errno
//   (EAGAIN, ENOMEM, ENOENT for a missing program), ECANCELED when cancelFd became readable,
//   EPROTO when the child ended in a way the protocol does not know (an exit status other than
//   the above, or exit 0 before its last stage: guard.program is not a reclaimd). The caller
//   must not parse the text in process then.
Result<void> checkParseFinishes(const std::vector<PolicyText>& files, const ParseGuard& guard);

// readPolicyFiles, checkParseFinishes, then parsePolicyFiles: the policy file and its drop-ins as
// the daemon loads them. Errors: those three functions'.
Result<Policy> loadPolicyFileGuarded(const std::string& path, const ParseGuard& guard);

// The body of kParseSubcommand: limits its own resources (limitParseResources), reads
// encodePolicyTexts' form from fd 0, and parses: first each file's YAML alone, then all of them
// together, writing one byte to fd 1 before each stage so the parent knows which file was being
// read when it had to stop the child. Returns 0 when every stage returned (valid or not), or
// kParseChildBadInput. Running out of memory exits kParseChildOutOfMemory; running out of CPU
// time is the kernel's SIGXCPU.
int parsePolicyChild();

// Limits the calling process for a parse: RLIMIT_CPU (kParseCpuLimit), RLIMIT_AS
// (kParseMemoryBytes, not under ASan), no core file (SIGXCPU dumps core by default), and a failed
// allocation exits kParseChildOutOfMemory rather than throw (a caught bad_alloc reads as an
// invalid policy, which the caller would then parse unbounded). For a child process only.
void limitParseResources();

// How a parse child ended (a waitpid status) as checkParseFinishes reports it; `culprit` is the
// path the message names.
Result<void> judgeParseEnd(int waitStatus, const std::string& culprit);

// The child's stdin: for each file "<source bytes> <text bytes>\n<source><text>".
std::string encodePolicyTexts(const std::vector<PolicyText>& files);
// The inverse. Errors: Errc::Parse for a malformed header or a length past the end.
Result<std::vector<PolicyText>> decodePolicyTexts(std::string_view data);

}  // namespace reclaimd::policies

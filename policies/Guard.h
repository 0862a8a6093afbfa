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
// Measured in the child (release build, 2 cores at load 9): 1,000 rules (70 KB, valid) take
// 0.04 s of CPU and 9 MiB; the densest 1 MiB of YAML (one flow sequence of 520,000 scalars,
// invalid) 1.6 s and 241 MiB; ",a-\n  b\n" had grown to 400 MiB when SIGXCPU stopped it at 2 s
// (the hard limit one second later is SIGKILL). A valid policy is at most 1,000 rules, so only
// huge invalid files come near the limit, and they are refused either way.
inline constexpr std::chrono::seconds kParseCpuLimit{2};
// The wall-clock bound on the whole check, for a child that stops using CPU without ending (a
// stopped or blocked process): the runaway input reached its CPU limit 4.3 to 4.7 s after its
// start at load 7 to 10 on 2 cores; at worst the message then names this bound instead.
inline constexpr std::chrono::seconds kParseWallLimit{5};
// Four times the densest 1 MiB input's 241 MiB, so a runaway that allocates faster than the one
// known is stopped before it takes a small VM's memory. Not applied under AddressSanitizer, which
// reserves terabytes of address space for its shadow.
inline constexpr std::uint64_t kParseMemoryBytes = 1ULL << 30;
// The child's exit status when an allocation failed under kParseMemoryBytes.
inline constexpr int kParseChildOutOfMemory = 3;
// The child's exit status when its stdin was not encodePolicyTexts' form.
inline constexpr int kParseChildBadInput = 4;
// What the child writes on its stdout: kStageMark as the parse reaches each file's YAML and then
// the merged policy (ParseProgress), kDoneMark when the parse returned. Only a child that wrote
// kDoneMark vouches for the text; the stage marks name the file it was reading when stopped.
inline constexpr char kStageMark = '.';
inline constexpr char kDoneMark = '!';

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
//   the above, or exit 0 without kDoneMark: guard.program is not a reclaimd). The caller
//   must not parse the text in process then.
Result<void> checkParseFinishes(const std::vector<PolicyText>& files, const ParseGuard& guard);

// readPolicyFiles, checkParseFinishes, then parsePolicyFiles: the policy file and its drop-ins as
// the daemon loads them. Errors: those three functions'.
Result<Policy> loadPolicyFileGuarded(const std::string& path, const ParseGuard& guard);

// The body of kParseSubcommand: limits its own resources (limitParseResources), reads
// encodePolicyTexts' form from fd 0, and parses it with parsePolicyFiles, writing kStageMark and
// kDoneMark to fd 1. Returns 0 when the parse returned (valid or not), or kParseChildBadInput.
// Running out of memory exits kParseChildOutOfMemory; running out of CPU time is the kernel's
// SIGXCPU.
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

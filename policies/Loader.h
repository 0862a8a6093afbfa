// Loading and validating the YAML policy.
//
// Every key is documented in the README's config reference. Unknown keys, wrong types,
// duplicate keys and out-of-range values are errors that name the file, line and column;
// all of a file's errors are reported at once so one `check-config` run finds them all.
//
// Drop-ins: beside /etc/reclaimd/policy.yaml, the files /etc/reclaimd/policy.d/*.yaml (the
// directory is named after the file's stem) are read after it in lexical order: their
// settings override the main file's key by key and their rules are appended.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "base/Result.h"
#include "policies/Policy.h"

namespace reclaimd::policies {

// The policy text of all files together: 1 MiB is ~30,000 rules' worth of YAML, far more than
// kMaxRules, and it bounds the YAML reader's time and memory (a 1 MiB policy loads in well under
// a second) before any per-rule work.
inline constexpr std::size_t kMaxPolicyBytes = 1 << 20;
// Rules in all files. Real policies name a handful of slices and globs; 1,000 leaves room for a
// generated one while bounding the work: loading 1,000 rules took 41 ms, and matching one
// cgroup against all of them is 1,000 component comparisons at most per level (10,000 cgroups
// against 1,000 glob rules: 0.2-0.9 s on a loaded 2-core machine, so a walk should match a
// cgroup when it appears, not on every pass).
inline constexpr std::size_t kMaxRules = 1000;
// Drop-in files read beside one main file: each costs an open and a read at every reload.
inline constexpr std::size_t kMaxDropIns = 256;

// One file's text and the name messages give it (a path, or "<built-in>").
struct PolicyText {
  std::string source;
  std::string text;
};

// Parses policy text, one YAML document; `source` names it in messages.
// Errors: Errc::Invalid with one "source:line:column: key: problem" line per problem.
Result<Policy> parsePolicy(std::string_view text, const std::string& source);

// Told the index of each file before its YAML is read, then files.size() once all are read (the
// bounded check's child reports its progress with it: Guard.h).
using ParseProgress = std::function<void(std::size_t file)>;

// Parses a main file and its drop-ins (files[0] is the main one), merged: mappings key by key,
// rules appended. Pure: no file is read. Errors as parsePolicy's, each naming its own file.
Result<Policy> parsePolicyFiles(const std::vector<PolicyText>& files, const ParseProgress& progress = {});
// parsePolicyFiles, first tried in a forked child under Guard.h's limits (Bounded.cpp): some
// malformed YAML makes yaml-cpp 0.7 loop forever. For single-threaded callers only (the fuzz
// target): a fork while another thread holds a lock (the daemon's logger, ASan's allocator) can
// leave the child deadlocked; the daemon and check-config use loadPolicyFileGuarded (Guard.h).
// Errors: parsePolicyFiles', judgeParseEnd's refusal when the parse did not finish, or the
// fork/wait errno.
Result<Policy> parsePolicyBounded(const std::vector<PolicyText>& files);

// Reads one policy file: symlinks are followed (a Kubernetes ConfigMap's files are symlinks), but
// it is opened O_NONBLOCK and refused unless it is a regular file, so a FIFO cannot block a
// reload. Errors: the open/read errno with the path; Errc::Invalid, before anything is read, for
// a file that is not regular, not root's (nor the caller's), writable by its group or others
// (as sudo and systemd refuse such files), or larger than `budget` (what the policy and its
// drop-ins have left of kMaxPolicyBytes).
Result<std::string> readPolicyText(const std::string& path, std::size_t budget = kMaxPolicyBytes);

// The drop-in directory of a main file: "/etc/reclaimd/policy.yaml" -> "/etc/reclaimd/policy.d".
std::string dropInDirectory(const std::string& mainPath);

// Reads the main file and then its drop-ins (*.yaml in dropInDirectory, names not starting with
// '.', lexical order). A missing directory means no drop-ins. Errors: readPolicyText's, the
// directory's errno, or Errc::Invalid past kMaxDropIns or for a directory that is not sticky
// and is not root's or is writable by its group or others.
Result<std::vector<PolicyText>> readPolicyFiles(const std::string& mainPath);

// The files named *.yml in the drop-in directory, which readPolicyFiles does not read: paths,
// sorted. An administrator who wrote one meant it as a drop-in, so check-config and the daemon
// say it is skipped. None when the directory cannot be listed (readPolicyFiles says why).
std::vector<std::string> skippedDropIns(const std::string& mainPath);

// readPolicyFiles then parsePolicyFiles, in process and unbounded: for tests. `--config`, a
// reload and check-config load through loadPolicyFileGuarded (Guard.h).
Result<Policy> loadPolicyFile(const std::string& path);

}  // namespace reclaimd::policies

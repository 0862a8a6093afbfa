// The text of a recording (`reclaimd record`): one line per thing the engine learned, in the
// order it learned it. A line is a kind, then tokens separated by one space; a string token is
// escaped (%XX for '%', space and every byte outside printable ASCII), so a line is plain ASCII
// and a token never holds a space. Numbers are decimal. A result is "ok ..." or
// "err <value> <e|r> <context>" (an errno, or reclaimd's own Errc).
//
//   reclaimd-recording 6                      the header: the format's version
//   setup <dry_run> <trace> <own_cgroup>      EngineSetup
//   policy [<name> <text>]...                 the policy files, in the order they merge
//   caps <why> <capabilities...>              the probe's findings, handed to the engine
//   in <now_ns> <tick> <stop> <n> [<scope> <gone> <total>]... <result> <readings>   one Input
//   did <command...>                          the command the engine answered with
//   ask <reads...>                            the reads it asked for, answered in the next in
//   end <why>                                 the recording ends (stop, size cap, reload)
// The readings of an Input: the machine's CPU times ("-" when not read, else a result of busy,
// total and CPUs), reclaimd's own ("-" or nanoseconds), the machine's meminfo and workingset
// counters (refaults, activations; "-" or a result), the tree walk ("-" or a result), the busy
// scan ("-", or a result and reclaimd's own CPU time after it), then a count and each cgroup's
// memory (<path> <inode> <result>: cache, refaults, activations), a count and each cgroup's CPU
// (the same), and a count and each scope's pressure total (<scope> <result>).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/Result.h"
#include "controller/engine/Commands.h"
#include "controller/engine/Engine.h"

namespace reclaimd::controller {

inline constexpr std::string_view kRecordingMagic = "reclaimd-recording";
inline constexpr int kRecordingVersion = 6;

class LineWriter {
 public:
  explicit LineWriter(std::string_view kind) : line_(kind) {}
  LineWriter& u(std::uint64_t v);
  LineWriter& i(std::int64_t v);
  LineWriter& b(bool v) { return u(v ? 1 : 0); }
  LineWriter& s(std::string_view v);
  LineWriter& ns(std::chrono::nanoseconds d) { return i(d.count()); }
  LineWriter& word(std::string_view v);  // a token known to need no escaping
  LineWriter& error(const Error& e);
  const std::string& line() const { return line_; }

 private:
  std::string line_;
};

// Reads the tokens of one line. A bad token (missing, not a number, out of range) sets the
// first problem and answers 0 or ""; check ok() (and done()) once the line is read.
class LineReader {
 public:
  explicit LineReader(std::string_view line);  // copied: the reader owns its text
  LineReader(const LineReader&) = delete;
  LineReader& operator=(const LineReader&) = delete;
  const std::string& kind() const { return kind_; }
  std::uint64_t u(std::uint64_t max = UINT64_MAX);
  std::int64_t i();
  bool b() { return u(1) == 1; }
  std::string s();
  std::chrono::nanoseconds ns() { return std::chrono::nanoseconds(i()); }
  std::string word();
  // "ok" (true) or "err ..." (false, with the error read into `error`).
  bool okOrError(Error& error);
  // The line holds no more tokens (else a problem is set).
  bool done();
  bool more() const { return next_ < tokens_.size(); }
  // The next token, not taken ("" at the end).
  std::string_view peek() const { return more() ? tokens_[next_] : std::string_view(); }
  bool ok() const { return problem_.empty(); }
  const std::string& problem() const { return problem_; }
  void fail(std::string why);

 private:
  std::string text_;
  std::vector<std::string_view> tokens_;
  std::size_t next_ = 0;
  std::string kind_;
  std::string problem_;
};

void writeCaps(LineWriter& w, const Capabilities& c);
Capabilities readCaps(LineReader& r);
void writeInput(LineWriter& w, const Input& input);
Input readInput(LineReader& r);
// The command as a "did" line's tokens; replay compares its own commands' text with these.
std::string commandText(const Command& command);
// The reads an Output asked for as an "ask" line's tokens, compared the same way.
std::string readsText(const Reads& reads);

void writeTree(LineWriter& w, const cgroup::Tree& tree);
cgroup::Tree readTree(LineReader& r);
void writeMeminfo(LineWriter& w, const proc::Meminfo& m);
proc::Meminfo readMeminfo(LineReader& r);
void writeScan(LineWriter& w, const CgroupCpuScan& scan);
CgroupCpuScan readScan(LineReader& r);

}  // namespace reclaimd::controller

#include "controller/record/Replay.h"

#include <algorithm>
#include <cerrno>
#include <istream>
#include <memory>
#include <optional>
#include <ostream>

#include "controller/ExitCodes.h"
#include "controller/record/RecordFormat.h"
#include "policies/Loader.h"

namespace reclaimd::controller {

namespace {

const char* severityName(Severity s) {
  static constexpr const char* kNames[] = {"trace", "debug", "info", "warn", "error"};
  return kNames[static_cast<int>(s)];
}

// The recording's lines, one at a time, with one line of look-ahead.
class Lines {
 public:
  explicit Lines(std::istream& in) : in_(in) {}
  const std::string* peek() {
    if (!peeked_) {
      std::string line;
      if (!std::getline(in_, line)) return nullptr;
      peeked_ = std::move(line);
    }
    return &*peeked_;
  }
  std::optional<std::string> take() {
    if (!peek()) return std::nullopt;
    ++number_;
    return std::exchange(peeked_, std::nullopt);
  }
  std::size_t number() const { return number_; }

 private:
  std::istream& in_;
  std::optional<std::string> peeked_;
  std::size_t number_ = 0;
};

class Replayer {
 public:
  Replayer(std::istream& in, std::ostream& out, std::ostream& err) : lines_(in), out_(out), err_(err) {}

  int run() {
    if (!header()) return kExitDataError;
    while (auto line = lines_.take()) {
      LineReader r(*line);
      if (r.kind() == "end") {
        out_ << "end " << r.s() << "\n";
        return kExitOk;
      }
      if (!step(r)) return kExitDataError;
    }
    out_ << "end the file ends\n";
    return kExitOk;
  }

 private:
  bool fail(const std::string& why) {
    err_ << "reclaimd: replay: line " << lines_.number() << ": " << why << "\n";
    return false;
  }
  bool header();
  bool step(LineReader& r);
  bool decide(LineReader& r);
  bool expect(const std::string& kind, const std::optional<std::string>& text, const std::string& what);
  void print(Events events) {
    for (const Event& e : events)
      out_ << "event " << severityName(e.severity()) << " " << e.text() << "\n";
  }

  Lines lines_;
  std::ostream& out_;
  std::ostream& err_;
  std::unique_ptr<Engine> engine_;
};

bool Replayer::header() {
  auto magic = lines_.take();
  if (!magic) return fail("an empty file is not a recording");
  LineReader m(*magic);
  const std::int64_t version = m.i();
  if (m.kind() != kRecordingMagic || !m.done()) return fail("not a reclaimd recording");
  if (version != kRecordingVersion)
    return fail("a recording of version " + std::to_string(version) + "; this reclaimd replays version " +
                std::to_string(kRecordingVersion) + " only: record it again with this reclaimd");
  auto setupLine = lines_.take();
  auto policyLine = lines_.take();
  if (!setupLine || !policyLine) return fail("the recording ends in its header");
  LineReader s(*setupLine);
  EngineSetup setup;
  setup.dryRun = s.b();
  setup.traceTicks = s.b();
  setup.ownCgroup = s.s();
  if (s.kind() != "setup" || !s.done()) return fail("a malformed setup line: " + s.problem());
  LineReader p(*policyLine);
  if (p.kind() != "policy") return fail("the policy line is missing");
  std::vector<policies::PolicyText> files;
  while (p.ok() && p.more()) {
    policies::PolicyText f;
    f.source = p.s();
    f.text = p.s();
    files.push_back(std::move(f));
  }
  if (!p.ok()) return fail("a malformed policy line: " + p.problem());
  auto policy = files.empty() ? Result<policies::Policy>(policies::Policy{}) : policies::parsePolicyBounded(files);
  if (!policy) return fail("the recorded policy is invalid: " + policy.error().message());
  engine_ = std::make_unique<Engine>(std::move(*policy), setup);
  print(engine_->takeEvents());
  return true;
}

bool Replayer::step(LineReader& r) {
  if (r.kind() == "caps") {
    const std::string why = r.s();
    const Capabilities caps = readCaps(r);
    if (!r.done()) return fail("a malformed caps line: " + r.problem());
    engine_->setCapabilities(caps, why);
    print(engine_->takeEvents());
    return true;
  }
  if (r.kind() == "in") return decide(r);
  return fail("a " + r.kind().substr(0, 40) + " line where an input or the probe's findings belong");
}

bool Replayer::decide(LineReader& r) {
  const Input input = readInput(r);
  if (!r.done()) return fail("a malformed input: " + r.problem());
  const Output said = engine_->decide(input);
  print(said.events);
  if (!expect("did", said.command ? std::optional(commandText(*said.command)) : std::nullopt, "a command"))
    return false;
  if (said.command) out_ << "command " << commandText(*said.command) << "\n";
  return expect("ask", said.read.empty() ? std::nullopt : std::optional(readsText(said.read)), "reads");
}

// The recording's next line is a `kind` line saying `text` when the engine gave it (what), and
// none when it did not.
bool Replayer::expect(const std::string& kind, const std::optional<std::string>& text, const std::string& what) {
  const std::string* next = lines_.peek();
  const std::string nextKind = next ? next->substr(0, next->find(' ')) : "end";
  if (nextKind != "did" && nextKind != "ask" && nextKind != "in" && nextKind != "caps" && nextKind != "end")
    return fail("a " + nextKind.substr(0, 40) + " line where a command, reads or the next input belongs");
  const bool recorded = nextKind == kind;
  // A bare kind: the recording was cut short in the middle of this line.
  if (recorded && next->size() <= kind.size()) return fail("a " + kind + " line without its text (cut short?)");
  const std::string recordedText = recorded ? next->substr(kind.size() + 1) : "";
  if (!text) {
    if (recorded) return fail("the recording has " + what + " (" + recordedText + ") where the engine gives none");
    return true;
  }
  if (nextKind == "end") return true;  // cut short (its limit, a reload): nothing more to compare
  if (!recorded) return fail("the engine gives " + what + " (" + *text + ") the recording does not have");
  if (recordedText != *text) return fail("the engine gives " + *text + " where the recording has " + recordedText);
  lines_.take();
  return true;
}

}  // namespace

int replayRecording(std::istream& in, std::ostream& out, std::ostream& err) {
  return Replayer(in, out, err).run();
}

}  // namespace reclaimd::controller

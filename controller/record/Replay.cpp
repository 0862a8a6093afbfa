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

// The engine's readings, answered from the recording in its order.
class ReplaySensors final : public Sensors {
 public:
  explicit ReplaySensors(Lines& lines) : lines_(lines) {}
  // Set when the engine asked for what the recording does not have next.
  std::string problem;
  // Set when the recording ended where the engine asked for a reading.
  std::string ended;

  Result<CpuReading> cpu() override {
    return answer<CpuReading>("cpu", [](LineReader& r) { auto busy = r.ns();
      auto total = r.ns();
      // Any count is a reading the engine must take; a negative one is none.
      return CpuReading{busy, total, static_cast<unsigned>(std::clamp<std::int64_t>(r.i(), 0, 1 << 20))};
    });
  }
  std::chrono::nanoseconds ownCpu() override {
    auto r = next("owncpu");
    return r ? r->ns() : std::chrono::nanoseconds(0);
  }
  Result<proc::Meminfo> meminfo() override {
    return answer<proc::Meminfo>("meminfo", [](LineReader& r) { return readMeminfo(r); });
  }
  Result<std::uint64_t> machineRefaults() override {
    return answer<std::uint64_t>("refaults", [](LineReader& r) { return r.u(); });
  }
  Result<cgroup::Tree> tree(const cgroup::Descend&) override {
    return answer<cgroup::Tree>("tree", [](LineReader& r) { return readTree(r); });
  }
  Result<MemoryReading> memory(const CgroupRef& ref) override {
    return answer<MemoryReading>("memory", [](LineReader& r) { return MemoryReading{r.u(), r.u()}; }, &ref);
  }
  Result<std::chrono::nanoseconds> cgroupCpu(const CgroupRef& ref) override {
    return answer<std::chrono::nanoseconds>("cgcpu", [](LineReader& r) { return r.ns(); }, &ref);
  }
  Result<CgroupCpuScan> cgroupCpuScan() override {
    return answer<CgroupCpuScan>("scan", [](LineReader& r) { return readScan(r); });
  }
  Result<std::uint64_t> pressureTotal(ScopeId scope) override {
    auto r = next("psi");
    if (r && r->u(UINT32_MAX) != scope && r->ok()) mismatch("psi of scope " + std::to_string(scope), *r);
    return finish<std::uint64_t>(r, [](LineReader& x) { return x.u(); });
  }

 private:
  // The next line, which must be of `kind`; nullopt (and `problem` or `ended` set) otherwise.
  std::unique_ptr<LineReader> next(const std::string& kind) {
    if (!problem.empty() || !ended.empty()) return nullptr;
    const std::string* line = lines_.peek();
    auto r = std::make_unique<LineReader>(line ? *line : std::string("end the%20file%20ends"));
    if (r->kind() == "end") {
      ended = r->s();
      return nullptr;
    }
    lines_.take();
    if (r->kind() != kind) {
      mismatch(kind, *r);
      return nullptr;
    }
    return r;
  }
  void mismatch(const std::string& asked, const LineReader& r) {
    if (problem.empty())
      problem = "line " + std::to_string(lines_.number()) + ": the engine asks for " + asked +
                ", the recording has a " + r.kind() + " line";
  }
  template <class T, class F>
  Result<T> answer(const std::string& kind, F fields, const CgroupRef* ref = nullptr) {
    auto r = next(kind);
    if (r && ref) {
      const std::string path = r->s();
      const std::uint64_t inode = r->u();
      if (r->ok() && (path != ref->path || inode != ref->inode))
        mismatch(kind + " of '" + std::string(ref->path) + "'", *r);
    }
    return finish<T>(r, fields);
  }
  template <class T, class F>
  Result<T> finish(const std::unique_ptr<LineReader>& r, F fields) {
    if (!r || !problem.empty()) return errnoError(ENODATA, "no reading in the recording");
    Error e;
    const bool ok = r->okOrError(e);
    std::optional<T> value;
    if (ok) value.emplace(fields(*r));
    if (!r->done() && problem.empty())
      problem = "line " + std::to_string(lines_.number()) + ": " + r->kind() + ": " + r->problem();
    if (!problem.empty()) return errnoError(ENODATA, "a malformed reading in the recording");
    if (!ok) return e;
    return std::move(*value);
  }

  Lines& lines_;
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
    err_ << "replay: line " << lines_.number() << ": " << why << "\n";
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
  std::optional<ReplaySensors> sensors_;
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
  sensors_.emplace(lines_);
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
  const Output said = engine_->decide(input, *sensors_);
  if (!sensors_->problem.empty()) return fail(sensors_->problem);
  if (!sensors_->ended.empty()) return true;  // cut short: the next line is the end
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
    return fail("the recording has a " + nextKind.substr(0, 40) + " reading next that the engine did not ask for");
  const bool recorded = nextKind == kind;
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

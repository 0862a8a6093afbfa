// `reclaimd record`: every input the engine sees, written as it sees it (RecordFormat.h), so a
// run can be replayed offline. The command loop tells it each input (with the readings the engine
// asked for), each command and each request to read (DecideLog, Turn.h). The file is bounded:
// past its limit the recording ends with an end line (the daemon runs on and says so).
#pragma once

#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "controller/record/RecordFormat.h"
#include "controller/shell/Turn.h"
#include "policies/Loader.h"

namespace reclaimd::controller {

// The default bound on a recording: a busy machine's day at one tick a second.
inline constexpr std::uint64_t kDefaultRecordLimit = 256ULL << 20;

class Recorder final : public DecideLog {
 public:
  // Creates (or truncates) `path`, mode 0600. `ended` is told why, once, when the recording
  // ends before the daemon stops (the size limit, a write error, a reload).
  static Result<std::unique_ptr<Recorder>> create(const std::string& path, std::uint64_t limit,
                                                  std::function<void(const std::string& why)> ended);
  ~Recorder() override;

  // The header: the format's version, the engine's setup and the policy's files.
  void begin(const EngineSetup& setup, const std::vector<policies::PolicyText>& policy);
  void caps(const Capabilities& caps, std::string_view why);
  // The recording ends here (the daemon stops, or a reload: a recording holds one policy).
  void end(const std::string& why);

  void input(const Input& input) override;
  void did(const Command& command) override;
  void asked(const Reads& reads) override;

 private:
  Recorder(std::FILE* file, std::uint64_t limit, std::function<void(const std::string&)> ended)
      : file_(file), limit_(limit), ended_(std::move(ended)) {}
  void put(const LineWriter& line);

  std::FILE* file_;
  std::uint64_t limit_;
  std::uint64_t written_ = 0;
  bool open_ = true;
  std::function<void(const std::string&)> ended_;
};

}  // namespace reclaimd::controller

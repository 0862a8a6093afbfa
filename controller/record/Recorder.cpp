#include "controller/record/Recorder.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

namespace reclaimd::controller {

Result<std::unique_ptr<Recorder>> Recorder::create(const std::string& path, std::uint64_t limit,
                                                   std::function<void(const std::string&)> ended) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) return errnoError(errno, "create the recording " + path);
  std::FILE* file = ::fdopen(fd, "w");
  if (file == nullptr) {
    const int err = errno;
    ::close(fd);
    return errnoError(err, "open the recording " + path);
  }
  return std::unique_ptr<Recorder>(new Recorder(file, limit, std::move(ended)));
}

Recorder::~Recorder() {
  end("stop");
  std::fclose(file_);
}

void Recorder::put(const LineWriter& line) {
  if (!open_) return;
  const std::string& text = line.line();
  // Room is kept for the end line, so a recording cut at its limit still says why it ends.
  if (written_ + text.size() + 64 > limit_) {
    open_ = false;
    const std::string why = "the recording reached its limit of " + std::to_string(limit_) + " bytes";
    std::fprintf(file_, "end size-limit\n");
    std::fflush(file_);
    if (ended_) ended_(why);
    return;
  }
  if (std::fprintf(file_, "%s\n", text.c_str()) < 0) {
    open_ = false;
    if (ended_) ended_(errnoError(errno, "a write to the recording").message());
    return;
  }
  written_ += text.size() + 1;
}

void Recorder::begin(const EngineSetup& setup, const std::vector<policies::PolicyText>& policy) {
  put(LineWriter(kRecordingMagic).i(kRecordingVersion));
  put(LineWriter("setup").b(setup.dryRun).b(setup.traceTicks).s(setup.ownCgroup));
  LineWriter files("policy");
  for (const policies::PolicyText& f : policy)
    files.s(f.source).s(f.text);
  put(files);
}

void Recorder::caps(const Capabilities& caps, std::string_view why) {
  LineWriter w("caps");
  writeCaps(w.s(why), caps);
  put(w);
}

void Recorder::end(const std::string& why) {
  if (!open_) return;
  put(LineWriter("end").s(why));
  open_ = false;
  std::fflush(file_);
  if (why != "stop" && ended_) ended_("the recording ends: " + why);
}

void Recorder::input(const Input& input) {
  LineWriter w("in");
  writeInput(w, input);
  put(w);
}

void Recorder::did(const Command& command) {
  put(LineWriter("did").word(commandText(command)));
}

void Recorder::asked(const Reads& reads) {
  put(LineWriter("ask").word(readsText(reads)));
}

}  // namespace reclaimd::controller

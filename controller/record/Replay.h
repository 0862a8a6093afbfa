// `reclaimd replay FILE`: a fresh engine over a recording (Recorder.h), offline. The recording's
// inputs are handed to decide() in order, and its readings answer the engine's Sensors calls in
// order; each command and event is printed, the same every time. The engine must ask for the
// readings the recording holds, in its order, and answer the commands recorded: where it does
// not, replay says where and how they differ.
#pragma once

#include <iosfwd>

namespace reclaimd::controller {

// Prints to `out`; a malformed recording or a difference goes to `err`. Answers an exit code:
// 0, or kExitDataError.
int replayRecording(std::istream& in, std::ostream& out, std::ostream& err);

}  // namespace reclaimd::controller

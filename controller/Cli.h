// The command line: `reclaimd [run]`, `probe`, `check-config`.
#pragma once

namespace reclaimd::controller {

// Parses arguments, runs the chosen command and returns the process exit code.
int runCli(int argc, char** argv);

}  // namespace reclaimd::controller

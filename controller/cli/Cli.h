// The command line: `reclaimd [run]`, `probe`, `check-config`, `status`. Each subcommand takes
// its own options only; anything else is a usage error (exit 64).
#pragma once

#include <string>
#include <vector>

namespace reclaimd::controller {

// Parses arguments, runs the chosen command and returns the process exit code.
int runCli(int argc, char** argv);

// The arguments with the subcommand first: "run" is added when none is named, and one named
// after options (`reclaimd --proc-root X probe`: options first, as many tools take them) is
// moved to the front, so each subcommand's parser sees all of its options.
std::vector<std::string> normalizeArgs(std::vector<std::string> args);

}  // namespace reclaimd::controller

// What a command says when it cannot do what it was asked, on stderr.
#pragma once

#include <iostream>
#include <string_view>

namespace reclaimd::controller {

// Each line of `message` after "reclaimd: ", as Unix tools name themselves: a line in a script's
// log or a unit's journal says which program it came from, as the option parser's messages do
// (Cli.cpp). Not a policy file's errors: those start with the file and position
// (FILE:LINE:COLUMN: message, as a compiler's), the form editors and CI logs jump to.
inline void complain(std::string_view message) {
  while (!message.empty()) {
    const std::size_t end = message.find('\n');
    std::cerr << "reclaimd: " << message.substr(0, end) << "\n";
    message = end == std::string_view::npos ? std::string_view{} : message.substr(end + 1);
  }
}

}  // namespace reclaimd::controller

#include "base/Text.h"

namespace reclaimd {

void Split::Iterator::next() {
  for (;;) {
    if (rest_.empty()) {
      // The end: a separator at the very end of the text leaves nothing after it.
      done_ = true;
      rest_ = {};
      return;
    }
    const std::size_t cut = rest_.find_first_of(separators_);
    piece_ = rest_.substr(0, cut);
    rest_.remove_prefix(cut == std::string_view::npos ? rest_.size() : cut + 1);
    done_ = false;
    if (!skipEmpty_ || !piece_.empty()) return;
  }
}

Split lines(std::string_view text) {
  return Split(text, "\n", false);
}

Split fields(std::string_view line, std::string_view separators) {
  return Split(line, separators, true);
}

std::optional<std::pair<std::string_view, std::string_view>> splitOnce(std::string_view line, char separator) {
  const std::size_t at = line.find(separator);
  if (at == std::string_view::npos) return std::nullopt;
  return std::pair(line.substr(0, at), line.substr(at + 1));
}

}  // namespace reclaimd

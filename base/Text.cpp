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

std::size_t utf8Length(std::string_view s, std::size_t i) {
  const auto b = [&](std::size_t k) { return static_cast<unsigned char>(s[i + k]); };
  const unsigned char c = b(0);
  if (c < 0x80) return 1;
  std::size_t n = 0;
  unsigned char lo = 0x80, hi = 0xBF;  // the second byte's range
  if (c >= 0xC2 && c <= 0xDF) {
    n = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    n = 3;
    if (c == 0xE0) lo = 0xA0;
    if (c == 0xED) hi = 0x9F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;
  } else {
    return 0;
  }
  if (i + n > s.size() || b(1) < lo || b(1) > hi) return 0;
  for (std::size_t k = 2; k < n; ++k) {
    if (b(k) < 0x80 || b(k) > 0xBF) return 0;
  }
  return n;
}

}  // namespace reclaimd

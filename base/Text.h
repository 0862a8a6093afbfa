// Splitting kernel text: the one line loop and the one field splitter every parser uses.
// Views only: nothing is copied, so parsers stay pure parse(std::string_view) functions.
#pragma once

#include <cstddef>
#include <iterator>
#include <optional>
#include <string_view>
#include <utility>

namespace reclaimd {

// A forward range over the pieces of `text` between separators. Two ways to cut:
// - Lines (`'\n'`): every line, empty ones included; a last line without its newline is still
//   a line (a parser that needs the newline checks for it), and text ending in '\n' has no
//   empty line after it.
// - Fields (a set of separator characters): the non-empty runs between them, so repeated
//   spaces or tabs (/proc/stat's "cpu  1 2") never make an empty field.
class Split {
 public:
  class Iterator {
   public:
    using value_type = std::string_view;
    using difference_type = std::ptrdiff_t;
    using iterator_category = std::forward_iterator_tag;
    using pointer = const std::string_view*;
    using reference = const std::string_view&;

    Iterator() = default;
    Iterator(std::string_view rest, std::string_view separators, bool skipEmpty)
        : rest_(rest), separators_(separators), skipEmpty_(skipEmpty), done_(false) {
      next();
    }

    const std::string_view& operator*() const { return piece_; }
    const std::string_view* operator->() const { return &piece_; }
    Iterator& operator++() {
      next();
      return *this;
    }
    Iterator operator++(int) {
      Iterator old = *this;
      next();
      return old;
    }
    bool operator==(const Iterator& other) const {
      return done_ == other.done_ && (done_ || rest_.data() == other.rest_.data());
    }

   private:
    void next();

    std::string_view rest_;
    std::string_view separators_;
    std::string_view piece_;
    bool skipEmpty_ = false;
    bool done_ = true;
  };

  // Iterators copy what they need: one outliving its Split is fine (the text must live on).
  Iterator begin() const { return Iterator(text_, separators_, skipEmpty_); }
  Iterator end() const { return Iterator(); }

 private:
  friend Split lines(std::string_view text);
  friend Split fields(std::string_view text, std::string_view separators);
  Split(std::string_view text, std::string_view separators, bool skipEmpty)
      : text_(text), separators_(separators), skipEmpty_(skipEmpty) {}

  std::string_view text_;
  std::string_view separators_;
  bool skipEmpty_;
};

// The lines of `text`:  for (std::string_view line : lines(content)) ...
Split lines(std::string_view text);

// Kernel files separate fields by spaces, and /proc/stat also by tabs.
inline constexpr std::string_view kBlanks = " \t";

// The non-empty fields of `line` between any of `separators`.
Split fields(std::string_view line, std::string_view separators = kBlanks);

// "key value" and "Name:  value" lines: the text before the first `separator` and the text
// after it (not trimmed: each format says how its value is spaced). nullopt without one.
std::optional<std::pair<std::string_view, std::string_view>> splitOnce(std::string_view line, char separator);

// The length of the UTF-8 sequence at s[i] (1 for ASCII), or 0 when it is not valid UTF-8
// (overlong forms, surrogates and code points past U+10FFFF included, as in RFC 3629).
std::size_t utf8Length(std::string_view s, std::size_t i);

}  // namespace reclaimd

// Result<T>: a value or an Error (errno-style code plus the context it arose in).
// The project's one error style: no exceptions cross a module boundary.
#pragma once

#include <cerrno>
#include <string>
#include <system_error>
#include <utility>
#include <variant>

namespace reclaimd {

// Codes for errors that are not an errno: the context says everything, so messages do not
// end in a vague "Invalid argument".
enum class Errc {
  Parse = 1,    // malformed kernel or config text
  Invalid = 2,  // a value out of range, a rule that contradicts another
  Refused = 3,  // a file that is not a regular file (a symlink, FIFO, device): never opened
};
const std::error_category& reclaimdCategory();
inline std::error_code make_error_code(Errc e) {
  return {static_cast<int>(e), reclaimdCategory()};
}

struct Error {
  std::error_code code;
  std::string context;  // what was being done: "open /proc/stat", "parse memory.stat"

  // "context: reason" for errno errors, the context alone for Errc ones: the form every log
  // line and CLI message uses.
  std::string message() const;
  // The errno, or 0 for an Errc error (whose small values would read as EPERM, ENOENT...).
  int errnoValue() const { return code.category() == reclaimdCategory() ? 0 : code.value(); }
};

// An Error from an errno value, e.g. errnoError(errno, "write " + path).
Error errnoError(int err, std::string context);
// An Error for malformed input, with a description of what was wrong.
Error parseError(std::string context);
// An Error for a bad value or combination of values.
Error invalidError(std::string context);
// An Error for a file refused for what it is (a symlink, a FIFO): not "gone", not retried.
Error refusedError(std::string context);

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}      // NOLINT: implicit by design
  Result(Error error) : v_(std::move(error)) {}  // NOLINT: implicit by design

  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }

  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

  const Error& error() const { return std::get<1>(v_); }

 private:
  std::variant<T, Error> v_;
};

template <>
class [[nodiscard]] Result<void> {
 public:
  Result() = default;
  Result(Error error) : error_(std::move(error)), ok_(false) {}  // NOLINT: implicit by design

  bool ok() const { return ok_; }
  explicit operator bool() const { return ok_; }
  const Error& error() const { return error_; }

 private:
  Error error_;
  bool ok_ = true;
};

}  // namespace reclaimd

template <>
struct std::is_error_code_enum<reclaimd::Errc> : std::true_type {};

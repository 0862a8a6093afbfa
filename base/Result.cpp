#include "base/Result.h"

namespace reclaimd {

namespace {

class Category final : public std::error_category {
 public:
  const char* name() const noexcept override { return "reclaimd"; }
  std::string message(int value) const override {
    switch (static_cast<Errc>(value)) {
      case Errc::Parse: return "malformed input";
      case Errc::Invalid: return "invalid value";
      case Errc::Refused: return "refused: not a regular file";
    }
    return "unknown";
  }
};

}  // namespace

const std::error_category& reclaimdCategory() {
  static const Category category;
  return category;
}

std::string Error::message() const {
  if (!code || code.category() == reclaimdCategory()) return context;
  return context + ": " + code.message();
}

Error errnoError(int err, std::string context) {
  return Error{std::error_code(err, std::generic_category()), std::move(context)};
}

Error parseError(std::string context) {
  return Error{make_error_code(Errc::Parse), std::move(context)};
}

Error invalidError(std::string context) {
  return Error{make_error_code(Errc::Invalid), std::move(context)};
}

Error refusedError(std::string context) {
  return Error{make_error_code(Errc::Refused), std::move(context)};
}

}  // namespace reclaimd

#include "policies/Policy.h"

namespace reclaimd::policies {

const char* toString(Mode mode) {
  switch (mode) {
    case Mode::Disabled: return "disabled";
    case Mode::DropCache: return "dropcache";
    case Mode::Gradual: return "gradual";
  }
  return "?";
}

std::optional<Mode> parseMode(std::string_view text) {
  if (text == "disabled") return Mode::Disabled;
  if (text == "dropcache") return Mode::DropCache;
  if (text == "gradual") return Mode::Gradual;
  return std::nullopt;
}

}  // namespace reclaimd::policies

// What every fuzz target shares: the input as text, and a property check that aborts, so
// libFuzzer saves the input that broke the property as a crash artifact.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

// Not assert(): the fuzz build may define NDEBUG, and a property must never be compiled out.
#define FUZZ_CHECK(cond, what)                                                                           \
  do {                                                                                                   \
    if (!(cond)) {                                                                                       \
      std::fprintf(stderr, "property violated: %s\n  (%s at %s:%d)\n", what, #cond, __FILE__, __LINE__); \
      std::abort();                                                                                      \
    }                                                                                                    \
  } while (0)

namespace reclaimd::fuzz {

inline std::string_view asText(const std::uint8_t* data, std::size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

}  // namespace reclaimd::fuzz

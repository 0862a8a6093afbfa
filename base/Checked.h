// Checked arithmetic for kernel counters: a counter is whatever the file says, up to 2^64-1,
// so sums and unit conversions are checked instead of trusted (a wrapped sum would read as a
// tiny cache and a signed overflow is undefined behaviour).
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <optional>
#include <string>

#include "base/Result.h"

namespace reclaimd {

// a + b, nullopt when it does not fit in 64 bits.
constexpr std::optional<std::uint64_t> checkedAdd(std::uint64_t a, std::uint64_t b) {
  std::uint64_t out = 0;
  if (__builtin_add_overflow(a, b, &out)) return std::nullopt;
  return out;
}

// a * b, nullopt when it does not fit in 64 bits.
constexpr std::optional<std::uint64_t> checkedMul(std::uint64_t a, std::uint64_t b) {
  std::uint64_t out = 0;
  if (__builtin_mul_overflow(a, b, &out)) return std::nullopt;
  return out;
}

// The sum of `values`, nullopt when it does not fit in 64 bits.
constexpr std::optional<std::uint64_t> checkedSum(std::initializer_list<std::uint64_t> values) {
  std::uint64_t sum = 0;
  for (std::uint64_t v : values) {
    auto next = checkedAdd(sum, v);
    if (!next) return std::nullopt;
    sum = *next;
  }
  return sum;
}

// a + b, or 2^64-1 when it does not fit: for comparisons such as "has the cache grown a chunk
// past x", where a wrapped sum would be small and always passed.
constexpr std::uint64_t saturatingAdd(std::uint64_t a, std::uint64_t b) {
  return checkedAdd(a, b).value_or(std::numeric_limits<std::uint64_t>::max());
}

// was - now as a signed count, held at the int64 range: a cache that crossed 2^63 between two
// readings frees (or grows by) at most 2^63-1 bytes in the log, never a signed overflow.
constexpr std::int64_t saturatingDifference(std::uint64_t was, std::uint64_t now) {
  constexpr auto kMax = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
  if (was >= now) return static_cast<std::int64_t>(std::min(was - now, kMax));
  return -static_cast<std::int64_t>(std::min(now - was, kMax));
}

// A non-negative double as a count, held at [0, 2^64-1]: converting a double at or past 2^64
// (or a NaN) to an integer is undefined behaviour.
constexpr std::uint64_t saturatingCount(double value) {
  if (!(value > 0)) return 0;
  if (value >= 18446744073709551616.0) return std::numeric_limits<std::uint64_t>::max();
  return static_cast<std::uint64_t>(value);
}

// `count` units of `unit` (ticks of 10 ms, microseconds) as nanoseconds. std::chrono's
// nanoseconds hold a signed 64-bit count: about 292 years. Errors: EOVERFLOW naming `what`
// when the product does not fit (e.g. 10^12 ticks of 10 ms, or 10^16 us).
Result<std::chrono::nanoseconds> checkedNanoseconds(std::uint64_t count, std::chrono::nanoseconds unit,
                                                    const std::string& what);

}  // namespace reclaimd

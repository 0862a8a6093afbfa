// Parsing and printing of the sizes and durations that appear in the policy and the logs.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace reclaimd {

inline constexpr std::uint64_t kKiB = 1024;
inline constexpr std::uint64_t kMiB = 1024 * kKiB;
inline constexpr std::uint64_t kGiB = 1024 * kMiB;

// Parses an unsigned decimal integer, the whole of `text`. std::from_chars: no locale,
// no exceptions, no leading sign or space accepted.
std::optional<std::uint64_t> parseU64(std::string_view text);

// "134217728", "128K", "128M", "1G", "1T", with optional "i"/"iB"/"B" ("128MiB", "128MB"):
// all binary multiples, as the kernel's memparse reads them. nullopt on anything else or
// on overflow.
std::optional<std::uint64_t> parseBytes(std::string_view text);

// "500ms", "30s", "2m", "1h", or a bare number of seconds ("120"). nullopt otherwise.
std::optional<std::chrono::milliseconds> parseDuration(std::string_view text);

// Bytes as MiB with one decimal: "256.0" (the unit goes in the log key: asked_mib=256.0).
std::string formatMiB(std::uint64_t bytes);
// Signed variant for differences that may be negative (cache that grew during a step).
std::string formatMiBSigned(std::int64_t bytes);

// A human size for messages and the probe: "128MiB", "1GiB", "1536KiB", "17B".
std::string formatBytes(std::uint64_t bytes);

// A size as an administrator reads it, always in one form: the largest binary unit it reaches,
// with one decimal ("1.6 GiB", "128.0 MiB", "512.0 KiB", "17 B"). Status and its notes use it,
// so no exact-but-unreadable "1669426KiB" sits next to a rounded figure.
std::string formatSize(std::uint64_t bytes);
// Signed variant for differences that may be negative ("-3.2 MiB": cache that grew).
std::string formatSizeSigned(std::int64_t bytes);

// A duration for messages: "120s", "1.5s", "250ms".
std::string formatDuration(std::chrono::nanoseconds d);

}  // namespace reclaimd

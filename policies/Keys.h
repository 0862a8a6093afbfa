// The policy's machine-wide keys, written once: name, where the value lives, limits, help.
//
// The loader reads through this table, check-config prints through it, and the README's
// configuration reference and deploy/policy.yaml are generated from it (unit tests keep both
// equal to what it generates). Rule keys that set the same thing (floor, steps, idle, pressure)
// take their limits from the machine key here, so each range is written once.
#pragma once

#include <chrono>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <variant>

#include "policies/Policy.h"

namespace reclaimd::policies {

template <typename T>
using PolicyRef = T& (*)(Policy&);
// Where a key's value lives: the type says how it is parsed and printed (uint64: a size,
// uint32: a count, double: a percentage, milliseconds: a duration).
using PolicyField = std::variant<PolicyRef<Mode>, PolicyRef<bool>, PolicyRef<double>, PolicyRef<std::uint64_t>,
                                 PolicyRef<std::uint32_t>, PolicyRef<std::chrono::milliseconds>>;

// Inclusive limits in the value's unit (bytes, milliseconds, percent, a count); every limit
// here is a whole number below 2^53 or a short decimal, exact enough in a double.
struct Limits {
  double min = 0;
  double max = 0;
};

struct Key {
  std::string_view name;  // "idle.grace"; the section is what precedes the dot
  PolicyField field;
  Limits limits;          // unused for modes and booleans
  std::string_view help;  // markdown; the limits are appended where the reference shows it
};

// Two keys whose values must stay ordered: low <= high.
struct KeyOrder {
  std::string_view low;
  std::string_view high;
};

std::span<const Key> policyKeys();
std::span<const KeyOrder> policyKeyOrders();
// The key named `name`, or nullptr.
const Key* findKey(std::string_view name);

// Sizes and durations as a policy file writes them: "128M", "2m", "500ms" (the largest unit
// that divides exactly). parseBytes/parseDuration read them back to the same value.
std::string policySize(std::uint64_t bytes);
std::string policyDuration(std::chrono::milliseconds d);

// A key's value in `policy` as a policy file writes it ("2m", "128M", "0.5", "true").
std::string showValue(const Key& key, const Policy& policy);
// The key's limits as the reference shows them ("1s-24h"), "" for modes and booleans.
std::string showLimits(const Key& key);

// The README's configuration reference table (markdown, one line per key, header included).
std::string referenceTable();
// deploy/policy.yaml: the built-in policy as commented-out defaults. `commented` false gives the
// same lines with the settings uncommented (what the tests parse back).
std::string shippedPolicy(bool commented);
// check-config's listing of the machine-wide settings: "idle.grace: 2m", one key a line.
std::string describeSettings(const Policy& policy);

}  // namespace reclaimd::policies

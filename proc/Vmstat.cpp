#include "proc/Vmstat.h"

#include <optional>
#include <string>

#include "base/Text.h"
#include "base/Quantities.h"

namespace reclaimd::proc {

namespace {

// A counter under its 5.9+ name or, older, its name without "_file".
struct Counter {
  std::string_view name;
  std::optional<std::uint64_t> file, legacy;

  std::optional<std::uint64_t>* slot(std::string_view key) {
    if (key.substr(0, name.size()) != name) return nullptr;
    const std::string_view rest = key.substr(name.size());
    return rest == "_file" ? &file : rest.empty() ? &legacy : nullptr;
  }
  std::optional<std::uint64_t> value() const { return file ? file : legacy; }
};

}  // namespace

// workingset_refault_file 12345
Result<Workingset> parseWorkingset(std::string_view content) {
  Counter refaults{"workingset_refault", {}, {}}, activations{"workingset_activate", {}, {}};
  for (std::string_view line : lines(content)) {
    auto keyed = splitOnce(line, ' ');
    if (!keyed) continue;
    std::optional<std::uint64_t>* slot = refaults.slot(keyed->first);
    if (!slot) slot = activations.slot(keyed->first);
    if (!slot) continue;
    auto value = parseU64(keyed->second);
    if (!value) return parseError("/proc/vmstat: malformed line \"" + std::string(line) + "\"");
    *slot = *value;
  }
  if (!refaults.value()) return parseError("/proc/vmstat: no workingset_refault_file line");
  return Workingset{*refaults.value(), activations.value().value_or(0)};
}

}  // namespace reclaimd::proc

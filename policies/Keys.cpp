#include "policies/Keys.h"

#include <fmt/format.h>

#include <array>

namespace reclaimd::policies {

namespace {

using std::chrono::milliseconds;

constexpr double kMaxSize = 1024.0 * kGiB;  // far above any machine here: a typo guard
constexpr double ms(milliseconds d) {
  return static_cast<double>(d.count());
}

// One 10 ms tick in 1,000 CPU-seconds (one tick per 10 s interval on 100 CPUs). Below it a
// threshold only means "not a single tick", which no machine running reclaimd (whose own samples
// cost ticks) reaches; it also keeps absurd values such as the subnormal 1e-320 out.
constexpr double kMinThresholdPercent = 0.001;

// clang-format off
const std::array kKeys = {
    Key{"mode", PolicyRef<Mode>([](Policy& p) -> Mode& { return p.mode; }), {},
        "`disabled`, `dropcache` or `gradual`: what the machine-wide settings (and so every cgroup no rule governs) "
        "do"},
    Key{"idle.threshold_percent", PolicyRef<double>([](Policy& p) -> double& { return p.idle.thresholdPercent; }),
        {kMinThresholdPercent, 100}, "busy share of all CPUs at or under which the machine is idle"},
    Key{"idle.grace", PolicyRef<milliseconds>([](Policy& p) -> milliseconds& { return p.idle.grace; }),
        {ms(1s), ms(24h)}, "how long it must stay idle before reclaim; also the rolling window"},
    Key{"idle.interval", PolicyRef<milliseconds>([](Policy& p) -> milliseconds& { return p.idle.interval; }),
        {ms(1s), ms(1h)}, "span of the current-interval check"},
    // Under 100 ms a sample would often see no tick change at all.
    Key{"idle.sample_period", PolicyRef<milliseconds>([](Policy& p) -> milliseconds& { return p.idle.samplePeriod; }),
        {ms(100ms), ms(1min)}, "how often /proc/stat is read while quiet"},
    Key{"idle.predict", PolicyRef<bool>([](Policy& p) -> bool& { return p.idle.predict; }), {},
        "sample faster while busy (every `threshold_percent × grace`, 0.2-1 s) and wake at the predicted end of the "
        "grace period; `false` gives fixed ticks as WSL does"},
    Key{"idle.units", PolicyRef<bool>([](Policy& p) -> bool& { return p.idle.units; }), {},
        "gradual mode, where no rule governs: a cgroup (a systemd unit or slice, a container, any cgroup) that used at "
        "most `threshold_percent` of one CPU over a grace period is reclaimed to `reclaim.cgroup_floor` while the "
        "machine stays busy; until then, from two busy scans after its work, the busy machine's trim probes go to it"},
    Key{"reclaim.floor", PolicyRef<std::uint64_t>([](Policy& p) -> std::uint64_t& { return p.reclaim.floor; }),
        {0, kMaxSize},
        "reclaimable memory the machine keeps in RAM whatever the rules' floors say: the root target's floor"},
    Key{"reclaim.cgroup_floor",
        PolicyRef<std::uint64_t>([](Policy& p) -> std::uint64_t& { return p.reclaim.cgroupFloor; }), {0, kMaxSize},
        "file cache each governed cgroup below the root keeps unless its rule says otherwise: a typical service's "
        "executable and libraries"},
    // Under 1 MiB a request is lost in the kernel's 32-page reclaim batches.
    Key{"reclaim.step_min", PolicyRef<std::uint64_t>([](Policy& p) -> std::uint64_t& { return p.reclaim.stepMin; }),
        {kMiB, kMaxSize}, "smallest step"},
    Key{"reclaim.step_max", PolicyRef<std::uint64_t>([](Policy& p) -> std::uint64_t& { return p.reclaim.stepMax; }),
        {kMiB, kMaxSize}, "largest step"},
    Key{"reclaim.step_divisor",
        PolicyRef<std::uint32_t>([](Policy& p) -> std::uint32_t& { return p.reclaim.stepDivisor; }), {1, 4096},
        "a step is MemTotal / this, clamped to [step_min, step_max]"},
    Key{"reclaim.chunk", PolicyRef<std::uint64_t>([](Policy& p) -> std::uint64_t& { return p.reclaim.chunk; }),
        {kMiB, kMaxSize}, "largest single memory.reclaim request"},
    Key{"reclaim.compact", PolicyRef<bool>([](Policy& p) -> bool& { return p.reclaim.compact; }), {},
        "compact free memory on entering an idle period and after reclaim"},
    Key{"pressure.enabled", PolicyRef<bool>([](Policy& p) -> bool& { return p.pressure.enabled; }), {},
        "watch PSI, back off under pressure, protect against refaults"},
    // The kernel's limits on a trigger: window 500ms..10s, stall within the window.
    Key{"pressure.stall", PolicyRef<milliseconds>([](Policy& p) -> milliseconds& { return p.pressure.stall; }),
        {ms(1ms), ms(10s)}, "\"some\" stall within a window that counts as pressure"},
    Key{"pressure.window", PolicyRef<milliseconds>([](Policy& p) -> milliseconds& { return p.pressure.window; }),
        {ms(500ms), ms(10s)},
        "the trigger's window; without CAP_SYS_RESOURCE, which the shipped unit does not grant, the kernel takes "
        "only multiples of 2s, else totals are polled"},
    Key{"pressure.calm", PolicyRef<milliseconds>([](Policy& p) -> milliseconds& { return p.pressure.calm; }),
        {ms(1s), ms(1h)}, "pressure-free time before reclaim resumes"},
    Key{"pressure.min_step", PolicyRef<std::uint64_t>([](Policy& p) -> std::uint64_t& { return p.pressure.minStep; }),
        {kMiB, kMaxSize}, "halving stops here"},
    Key{"pressure.refault_limit",
        PolicyRef<std::uint64_t>([](Policy& p) -> std::uint64_t& { return p.pressure.refaultLimit; }),
        {4 * kKiB, kMaxSize},
        "cache read back within `refault_window` after a step, beyond the prior rate, that raises the floor"},
    Key{"pressure.refault_window",
        PolicyRef<milliseconds>([](Policy& p) -> milliseconds& { return p.pressure.refaultWindow; }),
        {ms(1s), ms(10min)},
        "how long after an idle step its refaults are watched (a trim probe's: at least the idle grace)"},
    Key{"trim.enabled", PolicyRef<bool>([](Policy& p) -> bool& { return p.trim.enabled; }), {},
        "gradual mode: return cold cache from targets that are busy, in probes that grow while nothing comes back "
        "from disk and shrink at a refault; `false` reclaims only when idle, as WSL's own reclaim does"},
    // Under 500 ms a probe's refaults have no time to show before the next.
    Key{"trim.interval", PolicyRef<milliseconds>([](Policy& p) -> milliseconds& { return p.trim.interval; }),
        {ms(500ms), ms(1h)}, "one probe per busy target per interval"},
    Key{"trim.percent", PolicyRef<double>([](Policy& p) -> double& { return p.trim.percent; }), {0.01, 10},
        "the first probes' size as a share of what lies above the target's floor"},
    Key{"trim.min_step", PolicyRef<std::uint64_t>([](Policy& p) -> std::uint64_t& { return p.trim.minStep; }),
        {kMiB, kMaxSize}, "a probe's smallest size, and its size after a refault"},
};
// clang-format on

const std::array kOrders = {
    KeyOrder{"idle.interval", "idle.grace"},
    KeyOrder{"idle.sample_period", "idle.interval"},
    KeyOrder{"reclaim.step_min", "reclaim.step_max"},
    KeyOrder{"pressure.stall", "pressure.window"},
};

std::string withoutBackticks(std::string_view text) {
  std::string out;
  for (char c : text)
    if (c != '`') out += c;
  return out;
}

// `text` as comment lines starting with `lead`, wrapped at 100 columns.
std::string wrapped(const std::string& text, const std::string& lead) {
  constexpr std::size_t kWidth = 100;
  std::string out, line;
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t space = text.find(' ', pos);
    if (space == std::string::npos) space = text.size();
    const std::string word = text.substr(pos, space - pos);
    if (!line.empty() && lead.size() + line.size() + 1 + word.size() > kWidth) {
      out += lead + line + "\n";
      line.clear();
    }
    line += (line.empty() ? "" : " ") + word;
    pos = space + 1;
  }
  return out + lead + line + "\n";
}

}  // namespace

std::span<const Key> policyKeys() {
  return kKeys;
}

std::span<const KeyOrder> policyKeyOrders() {
  return kOrders;
}

const Key* findKey(std::string_view name) {
  for (const Key& k : kKeys)
    if (k.name == name) return &k;
  return nullptr;
}

std::string policySize(std::uint64_t bytes) {
  constexpr std::array<std::pair<std::uint64_t, const char*>, 4> kUnits = {
      {{1024 * kGiB, "T"}, {kGiB, "G"}, {kMiB, "M"}, {kKiB, "K"}}};
  for (auto [unit, suffix] : kUnits)
    if (bytes >= unit && bytes % unit == 0) return std::to_string(bytes / unit) + suffix;
  return std::to_string(bytes);
}

std::string policyDuration(milliseconds d) {
  const auto n = d.count();
  if (n >= 3'600'000 && n % 3'600'000 == 0) return std::to_string(n / 3'600'000) + "h";
  if (n >= 60'000 && n % 60'000 == 0) return std::to_string(n / 60'000) + "m";
  if (n >= 1000 && n % 1000 == 0) return std::to_string(n / 1000) + "s";
  return std::to_string(n) + "ms";
}

std::string showValue(const Key& key, const Policy& policy) {
  Policy copy = policy;  // the table's references are to a mutable policy; this one is only read
  return std::visit(
      [&](auto ref) -> std::string {
        const auto& v = ref(copy);
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, Mode>) return toString(v);
        if constexpr (std::is_same_v<T, bool>) return v ? "true" : "false";
        if constexpr (std::is_same_v<T, double>) return fmt::format("{:g}", v);
        if constexpr (std::is_same_v<T, std::uint64_t>) return policySize(v);
        if constexpr (std::is_same_v<T, std::uint32_t>) return std::to_string(v);
        if constexpr (std::is_same_v<T, milliseconds>) return policyDuration(v);
      },
      key.field);
}

std::string showLimits(const Key& key) {
  const Limits& l = key.limits;
  return std::visit(
      [&](auto ref) -> std::string {
        using T = std::decay_t<decltype(ref(std::declval<Policy&>()))>;
        if constexpr (std::is_same_v<T, double>) return fmt::format("{:g}-{:g}", l.min, l.max);
        if constexpr (std::is_same_v<T, std::uint64_t>) {
          return policySize(static_cast<std::uint64_t>(l.min)) + "-" + policySize(static_cast<std::uint64_t>(l.max));
        }
        if constexpr (std::is_same_v<T, std::uint32_t>) return fmt::format("{:g}-{:g}", l.min, l.max);
        if constexpr (std::is_same_v<T, milliseconds>) {
          return policyDuration(milliseconds(static_cast<std::int64_t>(l.min))) + "-" +
                 policyDuration(milliseconds(static_cast<std::int64_t>(l.max)));
        }
        return "";
      },
      key.field);
}

namespace {

// What the reference and the shipped file say about a key's range: its limits and its order.
std::string constraints(const Key& key) {
  std::string out = showLimits(key);
  for (const KeyOrder& o : kOrders) {
    if (o.low == key.name) out += (out.empty() ? "" : ", ") + std::string("at most `") + std::string(o.high) + "`";
    if (o.high == key.name) out += (out.empty() ? "" : ", ") + std::string("at least `") + std::string(o.low) + "`";
  }
  return out;
}

}  // namespace

std::string referenceTable() {
  const Policy defaults;
  std::string out = "| key | default | meaning |\n|---|---|---|\n";
  for (const Key& k : kKeys) {
    const std::string range = constraints(k);
    out += "| `" + std::string(k.name) + "` | `" + showValue(k, defaults) + "` | " + std::string(k.help) +
           (range.empty() ? "" : " (" + range + ")") + " |\n";
  }
  return out + "| `rules` | none | per-cgroup rules, below |\n";
}

std::string describeSettings(const Policy& policy) {
  std::string out;
  for (const Key& k : kKeys)
    out += std::string(k.name) + ": " + showValue(k, policy) + "\n";
  return out;
}

std::string shippedPolicy(bool commented) {
  const std::string set = commented ? "# " : "";  // how a setting line starts
  std::string out =
      "# reclaimd policy: /etc/reclaimd/policy.yaml\n"
      "#\n"
      "# The built-in policy: every key is commented out at its default. To change one, uncomment it\n"
      "# and its section line. Drop-ins in /etc/reclaimd/policy.d/*.yaml are read after this file in\n"
      "# lexical order: their keys override these one by one, their rules are appended.\n"
      "# Check a change with `reclaimd check-config /etc/reclaimd/policy.yaml`, apply it with\n"
      "# `systemctl reload reclaimd` (SIGHUP; an invalid file is rejected and the old policy kept).\n"
      "# Sizes: 128M, 1G, 134217728. Durations: 500ms, 30s, 2m, 1h.\n"
      "# Generated from policies/Keys.cpp; a unit test keeps the two equal.\n";
  const Policy defaults;
  std::string section;
  for (const Key& k : kKeys) {
    const std::string name(k.name);
    const std::size_t dot = name.find('.');
    const std::string own = dot == std::string::npos ? "" : name.substr(0, dot);
    const std::string indent = own.empty() ? "" : "  ";
    if (own != section) {
      out += "\n" + set + own + ":\n";
      section = own;
    } else if (own.empty()) {
      out += "\n";
    }
    const std::string range = constraints(k);
    const std::string help = withoutBackticks(std::string(k.help) + (range.empty() ? "" : " (" + range + ")"));
    // A section's help goes inside it ("#   # ..."), so uncommenting a whole block stays valid.
    const std::string lead = own.empty() ? "# " : (commented ? "# " + indent : indent) + "# ";
    out += wrapped(help, lead);
    out += set + indent + name.substr(dot == std::string::npos ? 0 : dot + 1) + ": " + showValue(k, defaults) + "\n";
  }
  return out +
         "\n"
         "# Per-cgroup rules (none by default: the whole tree under the settings above). For example:\n"
         "# rules:\n"
         "#   - match: build.slice          # idle by its own CPU, even while an editor ticks elsewhere\n"
         "#     idle_source: cgroup\n"
         "#     floor: 64M\n"
         "#   - match: \"user.slice/**\"\n"
         "#     mode: disabled\n";
}

}  // namespace reclaimd::policies

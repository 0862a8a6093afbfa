// The trimming law's test set-ups: settings, what comes back from disk, and rounds of probes.
#pragma once

#include <chrono>
#include <cstdint>
#include <vector>

#include "controller/engine/TrimLaw.h"

namespace reclaimd::controller {

inline constexpr std::uint64_t kMiB = 1ULL << 20;

inline const TrimLawSettings kDefault{4 * kMiB, 1, 64 * kMiB, std::chrono::seconds(120)};  // a clean stretch: 60 s

// Read back from disk, none of it activated (7.2 counts a read() refault as a restore).
inline ReadBack notActivated(std::uint64_t bytes) {
  return ReadBack{bytes, 0};
}
// Read back from disk and activated, every page (6.1's and 6.12's LRUs).
inline ReadBack activated(std::uint64_t bytes) {
  return ReadBack{bytes, bytes};
}

// Probing starts with 300 MiB over the floor; a first refault, then 76 MiB freed down to 100 MiB
// above the floor (near the bottom), all read back, at `level`: whether that held.
inline bool heldAt(TrimLaw& law, TimePoint& t, std::uint64_t level) {
  using namespace std::chrono_literals;
  law.start(t, 300 * kMiB, kDefault);
  law.refaulted(t += 6s, 300 * kMiB, notActivated(0), kDefault);
  law.freed(76 * kMiB);
  law.probed(t += 6s, 100 * kMiB, kDefault);
  return law.refaulted(t += 6s, level, notActivated(76 * kMiB), kDefault).has_value();
}

struct Rounds {
  std::uint64_t back = 0;            // read back in all
  std::vector<std::uint64_t> steps;  // the step after each round, MiB
  unsigned holds = 0;                // refaults that started a hold
};

// Probing starts with `above` over the floor; a first refault, then `rounds` rounds of `probes`
// probes each whose every byte comes back, a second apart: activated, or (`activates` false) not.
inline Rounds roundsBack(TrimLaw& law, TimePoint& t, std::uint64_t above, int rounds, int probes = 1,
                         bool activates = true) {
  using namespace std::chrono_literals;
  const auto readBack = [activates](std::uint64_t bytes) { return activates ? activated(bytes) : notActivated(bytes); };
  Rounds r;
  law.start(t, above, kDefault);
  r.holds += law.refaulted(t += 1s, above, readBack(r.back), kDefault).has_value();
  for (int round = 0; round < rounds; ++round) {
    for (int probe = 0; probe < probes; ++probe) {
      law.freed(law.step());
      r.back += law.step();
    }
    r.holds += law.refaulted(t += 1s, above, readBack(r.back), kDefault).has_value();
    r.steps.push_back(law.step() / kMiB);
  }
  return r;
}

}  // namespace reclaimd::controller

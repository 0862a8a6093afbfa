// Exit codes, from sysexits(3) where one fits, so systemd and scripts can tell causes apart.
#pragma once

namespace reclaimd::controller {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;       // a runtime error the log explains
inline constexpr int kExitUsage = 64;        // EX_USAGE: bad command line
inline constexpr int kExitUnavailable = 69;  // EX_UNAVAILABLE: the policy asks for reclaim, and the probe found no way
inline constexpr int kExitConfig = 78;       // EX_CONFIG: the policy file is invalid

}  // namespace reclaimd::controller

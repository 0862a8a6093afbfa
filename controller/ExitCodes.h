// Exit codes, from sysexits(3) where one fits, so systemd and scripts can tell causes apart.
#pragma once

namespace reclaimd::controller {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;        // a runtime error the log explains
inline constexpr int kExitUsage = 64;         // EX_USAGE: bad command line
inline constexpr int kExitNoInput = 66;       // EX_NOINPUT: an explicit --cgroup-root is not a cgroup2 root
inline constexpr int kExitUnavailable = 69;   // EX_UNAVAILABLE: the policy asks for reclaim, and the probe found no way
                                              // (for `status`: no daemon answers)
inline constexpr int kExitCantCreate = 73;    // EX_CANTCREAT: the status socket path holds something else
inline constexpr int kExitRunning = 75;       // EX_TEMPFAIL: another reclaimd answers on the status socket
inline constexpr int kExitNoPermission = 77;  // EX_NOPERM: `status` may not connect (EACCES: not root)
inline constexpr int kExitConfig = 78;        // EX_CONFIG: the policy file is invalid

}  // namespace reclaimd::controller

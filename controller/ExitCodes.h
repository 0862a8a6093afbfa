// Exit codes, from sysexits(3) where one fits, so systemd and scripts can tell causes apart.
// kExitCodes says what each means: the man page's EXIT STATUS and the README's table are written
// from it (tests/unit/ReferenceDocsTest.cpp checks them, RECLAIMD_REGENERATE=1 rewrites them).
#pragma once

#include <array>
#include <string_view>

namespace reclaimd::controller {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;
inline constexpr int kExitUsage = 64;         // EX_USAGE
inline constexpr int kExitDataError = 65;     // EX_DATAERR
inline constexpr int kExitNoInput = 66;       // EX_NOINPUT
inline constexpr int kExitUnavailable = 69;   // EX_UNAVAILABLE
inline constexpr int kExitCantCreate = 73;    // EX_CANTCREAT
inline constexpr int kExitRunning = 75;       // EX_TEMPFAIL
inline constexpr int kExitNoPermission = 77;  // EX_NOPERM
inline constexpr int kExitConfig = 78;        // EX_CONFIG

struct ExitCode {
  int code;
  std::string_view meaning;  // markdown, one sentence or two
};

inline constexpr std::array<ExitCode, 10> kExitCodes = {{
    {kExitOk, "success"},
    {kExitFailure, "a runtime failure; the log says which (the unit restarts the daemon)"},
    {kExitUsage,
     "bad command line: an unknown option, or one the subcommand does not take; a `--metrics-listen` address that "
     "is not loopback; an `--explain` path with wildcards; the unit does not restart on it"},
    {kExitDataError,
     "`replay`: the recording is malformed, or the engine asks for other readings or gives other commands than the "
     "recording holds"},
    {kExitNoInput,
     "an input cannot be opened: the policy file or one of its drop-ins (missing, no permission), or an explicit "
     "`--cgroup-root` that is not a cgroup2 root; the unit does not restart on it"},
    {kExitUnavailable,
     "`run`, `probe`: the policy asks for reclaim and the probe found no way to do any; `status`: no daemon answers "
     "on the socket; the unit does not restart on it"},
    {kExitCantCreate,
     "`run`: the status socket's path holds something other than a socket; the unit does not restart on it"},
    {kExitRunning, "`run`: another reclaimd answers on the status socket, or the `--metrics-listen` port is taken"},
    {kExitNoPermission, "`status`: the daemon's socket refused the connection (only root may ask)"},
    {kExitConfig,
     "the policy file is invalid (`check-config` lists every error) or its YAML does not finish reading; the unit "
     "does not restart on it"},
}};

}  // namespace reclaimd::controller

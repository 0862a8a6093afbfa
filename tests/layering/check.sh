#!/usr/bin/env bash
# The house's layering, checked on every include line: the lower floors (base, proc, cgroup,
# psi, policies) never include a controller header, and (base/Log aside, the logging facility
# itself) never include spdlog; the engine (controller/engine) never includes an I/O header:
# system call headers, logging, file helpers, the shell, the endpoints, the psi/proc/cgroup
# adapters. Prints each violation as file:line and fails when there is one.
set -euo pipefail
cd "$(dirname "$0")/../.."
found=0
report() {
	while IFS= read -r hit; do
		printf 'layering: %s (%s)\n' "$hit" "$1"
		found=1
	done
}
report "a lower floor includes a controller header" < <(grep -rnE '#include "controller/' base proc cgroup psi policies || true)
report "a lower floor includes logging" < <(grep -rnE '#include [<"]spdlog/' proc cgroup psi policies || true)
report "a lower floor includes logging" < <(grep -rnE '#include [<"]spdlog/|#include "base/Log.h"' base --exclude='Log.h' --exclude='Log.cpp' || true)
io='#include (<(unistd|fcntl|poll|signal|dirent)\.h>|<sys/|<spdlog/|"base/(Log|Files|UniqueFd|Systemd|Limits)\.h"|"controller/(shell|cli)/|"controller/operate/(Endpoints|Notify|MetricsFile|ProcessStats|Http)\.h"|"psi/Watch\.h"|"proc/Reader\.h"|"cgroup/Cgroup\.h")'
report "the engine includes an I/O header" < <(grep -rnE "$io" controller/engine || true)
if [ "$found" -ne 0 ]; then
	exit 1
fi
echo "layering: clean"

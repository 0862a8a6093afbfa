#!/usr/bin/env bash
# The house's layering, checked on every include line: the lower floors (base, proc, cgroup,
# psi, policies, access) never include a controller header, and (base/Log aside, the logging facility
# itself) never include spdlog. The engine's build refuses any header off its list
# (controller/engine/CMakeLists.txt); what an include path cannot refuse is checked here: a
# system header the C++ library includes itself (<unistd.h>, <signal.h>, any <sys/...>), so it
# cannot be poisoned, and a quoted include that climbs out of controller/engine by path.
# Prints each violation as file:line and fails when there is one.
set -euo pipefail
cd "$(dirname "$0")/../.."
found=0
report() {
	while IFS= read -r hit; do
		printf 'layering: %s (%s)\n' "$hit" "$1"
		found=1
	done
}
report "a lower floor includes a controller header" < <(grep -rnE '#include "controller/' base proc cgroup psi policies access || true)
report "a lower floor includes logging" < <(grep -rnE '#include [<"]spdlog/' proc cgroup psi policies access || true)
report "a lower floor includes logging" < <(grep -rnE '#include [<"]spdlog/|#include "base/Log.h"' base --exclude='Log.h' --exclude='Log.cpp' || true)
report "the engine includes a system call header" < <(grep -rnE '#include <(unistd\.h|signal\.h|sys/)' controller/engine || true)
report "the engine includes a header outside its folder by path" < <(grep -rnE '#include "(\.\./|/)' controller/engine || true)
if [ "$found" -ne 0 ]; then
	exit 1
fi
echo "layering: clean"

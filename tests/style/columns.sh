#!/usr/bin/env bash
# The C++ sources keep to .clang-format's 120 columns and the Python scripts to the same: a
# reviewer reads them side by side with a diff, and clang-format only wraps what it is run on
# (nothing wraps the Python). Prints each long line as file:line and fails when there is one.
set -euo pipefail
cd "$(dirname "$0")/../.."
long=$(find base cgroup controller policies proc psi tests -name build -prune -o \
	\( -name '*.cpp' -o -name '*.h' -o -name '*.py' \) -type f -print0 | sort -z |
	xargs -0 awk 'length > 120 { printf "columns: %s:%d is %d columns, over 120\n", FILENAME, FNR, length }')
if [ -n "$long" ]; then
	printf '%s\n' "$long"
	exit 1
fi
echo "columns: every C++ and Python line within 120"

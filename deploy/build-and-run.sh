#!/usr/bin/env bash
# Builds reclaimd on a Debian bookworm machine and runs it in the foreground with its built-in
# default policy (gradual reclaim after 2 minutes idle, 128 MiB floor). Needs root: it installs
# the build dependencies with apt-get, installs the binary as /usr/local/sbin/reclaimd (so
# `reclaimd status` works from another shell), and writes memory.reclaim / drop_caches when idle.
# Extra arguments go to reclaimd, e.g. `deploy/build-and-run.sh --dry-run --log-level debug`.
set -euo pipefail
cd "$(dirname "$0")/.."
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# shellcheck disable=SC2046
apt-get install -y -qq --no-install-recommends $(grep -v '^#' deploy/build-packages.txt) >/dev/null
# A build directory of its own: tests/run-all.sh's build/release keeps its tests configured.
cmake -S . -B build/run -DCMAKE_BUILD_TYPE=RelWithDebInfo -DRECLAIMD_TESTS=OFF -DRECLAIMD_BENCH=OFF >/dev/null
cmake --build build/run -j"$(nproc)" --target reclaimd
install -D -m 0755 build/run/controller/reclaimd /usr/local/sbin/reclaimd
echo "built build/run/controller/reclaimd, installed as /usr/local/sbin/reclaimd;" \
	"from another shell: reclaimd status" >&2
/usr/local/sbin/reclaimd probe || true
exec /usr/local/sbin/reclaimd run "$@"

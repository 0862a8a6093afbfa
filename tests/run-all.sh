#!/usr/bin/env bash
# The whole test suite, on a fresh Debian bookworm machine as root. Installs what it needs
# (build dependencies, QEMU and friends; the VM tests fetch Debian kernels 6.1, 6.12 and the
# newest into ${RECLAIMD_VM_CACHE:-/var/cache/reclaimd-vm}), builds twice (build/release with
# GCC; build/sanitize with clang under ASan+UBSan, float-cast-overflow included, which also
# holds the libFuzzer targets), then:
#   1. unit tests under ASan+UBSan (among them the man page and the README's reference checked
#      against the binary and the sources);
#   2. unit tests of the release build;
#   3. deployment: the systemd unit (verify, security exposure, a sandboxed run under
#      systemd-nspawn), the Debian package (dpkg-buildpackage, lintian, installed here with
#      dpkg, then purged), the Kubernetes manifests (the DaemonSet's container under runc, and
#      its image built with podman on a Debian base made by mmdebstrap, run, its metrics
#      scraped by Prometheus), the WSL recipe;
#   4. real-kernel tests: reclaimd inside QEMU on 6.12, 6.1 and the newest kernel, one VM per
#      CPU at a time, beside a nice-19 busy loop per CPU; every VM runs a canary timer and the
#      guest-side deadlines are judged net of its lateness (tests/vm/README.md); beside them,
#      at nice 19 as well, the libFuzzer targets (tests/fuzz) from the sanitizer build, 90 s each;
#   5. the benchmarks (tests/bench) in their smoke form, one VM at a time; they print figures.
# Any failure fails the run; nothing is skipped. Each step's start is printed with the seconds
# since the run began ("=== STEP (N s)").
set -euo pipefail
cd "$(dirname "$0")/.."
export DEBIAN_FRONTEND=noninteractive
start=$(date +%s)
step() { printf '\n=== %s (%ds)\n' "$*" $(($(date +%s) - start)); }

step "installing packages"
apt-get update -qq
# shellcheck disable=SC2046
apt-get install -y -qq --no-install-recommends $(grep -hv '^#' deploy/build-packages.txt tests/packages.txt tests/vm/packages.txt) >/dev/null

jobs=$(nproc)
step "building (release with GCC; ASan+UBSan and the fuzz targets with clang)"
# Every kind of test on, whatever an earlier configure of these directories left in the cache.
# Without debug information (-g0 after Debian's -g, for this configure only: the package test's
# own build keeps it): no test reads it, and it was 30-40 % of GCC's time per file (EngineTest.cpp
# 7.4 s -> 4.5 s of CPU); the guests' initramfs carries the binary without it too.
# Both trees as unity builds (CMake joins each target's files eight at a time): the headers each
# file includes (gtest, spdlog, yaml-cpp, the standard library) are parsed an eighth as often,
# 256 s -> 123 s for this tree and 314 s -> 205 s for the sanitizer's on two cores. Names in an
# anonymous namespace must therefore differ between files of one target; the per-file build a
# developer runs, and the Debian package's, still checks that every file includes what it uses.
unity=-DCMAKE_UNITY_BUILD=ON
DEB_CXXFLAGS_APPEND=-g0 cmake -S . -B build/release -DCMAKE_BUILD_TYPE=RelWithDebInfo -DRECLAIMD_TESTS=ON \
	-DRECLAIMD_BENCH=ON -DRECLAIMD_VM_TESTS=ON "$unity" >/dev/null
cmake --build build/release -j"$jobs"
# One sanitizer build for the unit tests and the fuzz targets: clang's UBSan, and libFuzzer.
# Line tables only: what the sanitizers' reports need for file:line, 15 % less of clang's time
# per file than full debug information.
cmake -S . -B build/sanitize -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	-DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -gline-tables-only -DNDEBUG" -DRECLAIMD_FUZZ=ON \
	-DRECLAIMD_FUZZ_SECONDS=90 -DRECLAIMD_FUZZ_TIMEOUT=20 -DRECLAIMD_TESTS=ON -DRECLAIMD_BENCH=OFF -DRECLAIMD_VM_TESTS=OFF "$unity" >/dev/null
cmake --build build/sanitize -j"$jobs"

step "unit tests under ASan+UBSan"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
	ctest --no-tests=error --test-dir build/sanitize -L unit -j"$jobs" --output-on-failure
step "unit tests (release)"
ctest --no-tests=error --test-dir build/release -L unit -j"$jobs" --output-on-failure
step "deployment tests"
ctest --no-tests=error --test-dir build/release -L deploy --output-on-failure
step "real-kernel tests in QEMU (6.12, 6.1, newest), $jobs at a time, on a loaded host; fuzzing beside them"
# The fuzz targets (every parser, the pattern matcher and the policy loader) run beside the VMs
# at nice 19: the guests wait through most of their scenarios (grace periods, idle stretches),
# and the CPU they leave, which the busy loops alone would burn, fuzzes. At nice 19 a fuzzer
# yields to the VMs as the loops do, so the VM tests see the same loaded host. 90 s each, 16
# targets two at a time, ~12 minutes, within the VM tests' 13: the loops leave them half of
# what the guests leave (two VM tests beside the loops on a host at load 8: 0.44 of a core),
# where each had a core for 20 s alone. A per-input timeout of 20 s: beside
# two busy guests a nice-19 process gets ~1.5 % of a core, so a 71 ms input may take 5 s,
# while the exponential matcher's 33 s (at a full core) still fails. Their output follows.
fuzz_log=build/sanitize/fuzz.log
# A process group of its own (setsid), so that a failed or interrupted run stops every fuzzer.
setsid nice -n 19 ctest --no-tests=error --test-dir build/sanitize -L fuzz -j"$jobs" --output-on-failure \
	>"$fuzz_log" 2>&1 &
fuzz_pid=$!
trap 'kill -- -"$fuzz_pid" 2>/dev/null || true' EXIT
vm_status=0
# A busy loop per CPU at nice 19 while they run (hog.py stops them whatever happens): a VM
# test must not depend on an idle host.
python3 tests/vm/hog.py -- ctest --no-tests=error --test-dir build/release -L vm -j"$jobs" --output-on-failure ||
	vm_status=$?
fuzz_status=0
wait "$fuzz_pid" || fuzz_status=$?
trap - EXIT
step "fuzzing (tests/fuzz), run beside the VM tests: its output"
cat "$fuzz_log"
if [ "$vm_status" -ne 0 ]; then
	# Last, so that a reader of the log's tail (CI shows its head and tail) sees what failed.
	step "real-kernel tests: the checks that failed"
	grep -h -e '^ *FAIL: ' -e '\*\*\*Failed' -e '\*\*\*Timeout' build/release/Testing/Temporary/LastTest.log |
		tail -n 40 || true
fi
if [ "$vm_status" -ne 0 ] || [ "$fuzz_status" -ne 0 ]; then
	echo "real-kernel tests exited $vm_status, fuzzing $fuzz_status" >&2
	exit 1
fi
step "benchmarks (smoke form)"
ctest --no-tests=error --test-dir build/release -L bench --output-on-failure -V
step "all tests passed"

#!/usr/bin/env python3
"""Smoke test of the VM harness on every kernel: runs guest/smoke.sh in a 6.1, 6.12, newest VM.

Usage: python3 tests/vm/smoke_test.py [--reclaimd build/reclaimd] [--kernel 6.1 ...]
Exit status: 0 if every kernel passed, else the first failing Result.code (see vm.py).
"""
import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import vm  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))


def main(argv=None):
    p = argparse.ArgumentParser(description="VM smoke test on real kernels")
    p.add_argument("--kernel", action="append", choices=vm.kernels.SERIES,
                   help="kernel series to test (repeatable; default: all)")
    p.add_argument("--reclaimd", help="also check that this binary starts in the guest")
    p.add_argument("--log-dir", default="/tmp/reclaimd-vm-smoke")
    a = p.parse_args(argv)
    # apt-config: a dynamically linked C++ program (libstdc++, libsystemd) on every Debian,
    # a stand-in for reclaimd that proves the shared libraries are copied right.
    add = [("/usr/bin/apt-config", "/opt/probe/apt-config")]
    if a.reclaimd:
        add.append((a.reclaimd, "/usr/bin/reclaimd"))
    results = []
    for series in a.kernel or vm.kernels.SERIES:
        t0 = time.monotonic()
        r = vm.run(os.path.join(HERE, "guest", "smoke.sh"), kernel=series, add=add,
                   data="3x100", timeout=120, log_dir=os.path.join(a.log_dir, series))
        results.append((series, r, time.monotonic() - t0))
    code = 0
    for series, r, took in results:
        verdict = "passed" if r.code == 0 else f"FAILED ({r.outcome}, exit {r.code})"
        print(f"smoke {series}: {verdict} in {took:.1f} s, logs in {r.log_dir}")
        code = code or r.code
    return code


if __name__ == "__main__":
    sys.exit(main())

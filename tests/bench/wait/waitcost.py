#!/usr/bin/env python3
"""What reclaimd costs while it waits, natively, against a bare 1 Hz loop on the same machine.

reclaimd runs with its built-in policy and --dry-run (it writes nothing, whatever the machine);
the baseline (WakeBaseline.cpp) wakes once a second and reads /proc/stat. Both run side by side
for --seconds; CPU time is the kernel's own account (sum_exec_runtime of every thread, from
/proc/PID/task/*/schedstat, what systemd's CPUUsageNSec adds up), wakeups the times each was put
on a CPU. Prints a table; fails only when the pipeline did not run (a process died, no figures).

    python3 tests/bench/wait/waitcost.py --reclaimd build/release/controller/reclaimd \\
        --baseline build/release/tests/bench/wait/reclaimd_wake_baseline --seconds 120
"""
import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time


def task_totals(pid):
    """(ns on a CPU, times run) summed over the process's threads."""
    ns = runs = 0
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                fields = f.read().split()
        except FileNotFoundError:
            continue  # a thread that just ended
        ns += int(fields[0])
        runs += int(fields[2])
    return ns, runs


def host_busy():
    """(busy, total) USER_HZ ticks of the aggregate cpu line, as reclaimd counts them."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    busy = v[0] + v[1] + v[2] + v[5] + v[6] + v[7]
    return busy, sum(v[:8])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reclaimd", required=True)
    ap.add_argument("--baseline", required=True)
    ap.add_argument("--seconds", type=float, default=120)
    ap.add_argument("--warmup", type=float, default=3)
    args = ap.parse_args()

    log = tempfile.NamedTemporaryFile(prefix="reclaimd-wait-", suffix=".log", delete=False)
    daemon = subprocess.Popen([args.reclaimd, "run", "--dry-run", "--log-level", "info", "--status-socket", ""],
                              stdout=log, stderr=subprocess.STDOUT,
                              env={k: v for k, v in os.environ.items() if k not in ("NOTIFY_SOCKET", "WATCHDOG_USEC")})
    base = subprocess.Popen([args.baseline])
    procs = {"reclaimd": daemon, "1 Hz loop": base}
    try:
        time.sleep(args.warmup)
        for name, p in procs.items():
            if p.poll() is not None:
                sys.exit(f"waitcost: {name} exited with {p.returncode} during warm-up (log: {log.name})")
        start = {name: task_totals(p.pid) for name, p in procs.items()}
        hb0, ht0 = host_busy()
        t0 = time.monotonic()
        time.sleep(args.seconds)
        elapsed = time.monotonic() - t0
        end = {name: task_totals(p.pid) for name, p in procs.items()}
        hb1, ht1 = host_busy()
    finally:
        base.kill()
        daemon.send_signal(signal.SIGTERM)
        code = daemon.wait(timeout=10)
        base.wait()
    with open(log.name) as f:
        text = f.read()
    if code != 0:
        sys.exit(f"waitcost: reclaimd exited with {code}:\n{text}")

    mode = next((w.split("=", 1)[1] for line in text.splitlines() if "event=start" in line
                 for w in line.split() if w.startswith("mode=")), "?")
    idle = "event=idle_entered" in text
    host_pct = 100.0 * (hb1 - hb0) / max(1, ht1 - ht0)
    print(f"reclaimd waiting, {elapsed:.0f} s, Linux {os.uname().release}, {os.cpu_count()} CPUs, "
          f"effective mode {mode} (dry run), machine busy {host_pct:.2f} % over the span"
          f"{' (went idle during the span)' if idle else ''}")
    print()
    print("| process | CPU, ms | % of a core | wakeups/s | us per wakeup |")
    print("|---|---|---|---|---|")
    figures = {}
    for name in procs:
        ns = end[name][0] - start[name][0]
        runs = end[name][1] - start[name][1]
        if runs <= 0:
            sys.exit(f"waitcost: {name} never ran in {elapsed:.0f} s")
        figures[name] = (ns, runs)
        print(f"| {name} | {ns / 1e6:.1f} | {100 * ns / (elapsed * 1e9):.4f} | {runs / elapsed:.2f} | "
              f"{ns / runs / 1e3:.0f} |")
    extra = figures["reclaimd"][0] - figures["1 Hz loop"][0]
    print()
    print(f"reclaimd above the bare loop: {100 * extra / (elapsed * 1e9):+.4f} % of a core")
    print("(reclaimd samples every 1 s while the machine is quiet and every 0.6 s while the last span was"
          " busy, with the default policy)")
    os.unlink(log.name)


if __name__ == "__main__":
    main()

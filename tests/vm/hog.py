#!/usr/bin/env python3
"""Run a command on a loaded host: busy loops at low priority on every CPU while it runs.

    python3 tests/vm/hog.py [--per-cpu N] [--nice 19] -- COMMAND [ARGS...]

The top-level test script runs the VM tests under it, so that a test which only passes on an
idle host fails there rather than on a developer's busy machine. The loops are started before
COMMAND and stopped on every exit path: when COMMAND ends, when this process gets SIGTERM,
SIGINT or SIGHUP (COMMAND's process group is stopped too: SIGTERM, SIGKILL after 10 s), and
if this process is killed outright (they have PR_SET_PDEATHSIG).
Exit status: COMMAND's (128 + signal if a signal ended it).
"""
import argparse
import ctypes
import os
import signal
import subprocess
import sys
import time

LOOP = "while True:\n    pass\n"


def _die_with_parent():
    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def _cpu_s(pid):
    """utime + stime of pid in seconds (0 once it is gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rpartition(")")[2].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return 0.0


def start_loops(count, nice):
    def child():
        _die_with_parent()
        os.nice(nice)
    return [subprocess.Popen([sys.executable, "-c", LOOP], preexec_fn=child,
                             stdin=subprocess.DEVNULL) for _ in range(count)]


def stop(procs):
    for p in procs:
        if p.poll() is None:
            p.kill()
    for p in procs:
        p.wait()


def _stop_group(child):
    """SIGTERM to the command's process group, SIGKILL to what is left after 10 s."""
    try:
        os.killpg(child.pid, signal.SIGTERM)
        child.wait(timeout=10)
    except subprocess.TimeoutExpired:
        pass
    try:
        os.killpg(child.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    child.wait()


class Stopped(Exception):
    def __init__(self, signum):
        super().__init__(signum)
        self.signum = signum


def _raise(signum, _frame):
    raise Stopped(signum)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--per-cpu", type=int, default=1, help="busy loops per online CPU")
    p.add_argument("--nice", type=int, default=19, help="nice value of the loops")
    p.add_argument("command", nargs=argparse.REMAINDER)
    a = p.parse_args(argv)
    cmd = a.command[1:] if a.command[:1] == ["--"] else a.command
    if not cmd:
        p.error("no command")
    for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(s, _raise)
    cpus = len(os.sched_getaffinity(0))
    t0 = time.monotonic()
    loops, child = [], None
    try:
        loops = start_loops(cpus * a.per_cpu, a.nice)
        print(f"hog: {len(loops)} busy loops at nice {a.nice} on {cpus} CPUs "
              f"(pids {' '.join(str(x.pid) for x in loops)})", file=sys.stderr, flush=True)
        # Its own process group: stopping it must reach what it started too (ctest leaves a
        # running test behind when it gets SIGTERM).
        child = subprocess.Popen(cmd, process_group=0)
        rc = child.wait()
    except Stopped as e:
        if child and child.poll() is None:
            _stop_group(child)
        rc = 128 + e.signum
    finally:
        used = sum(_cpu_s(x.pid) for x in loops)
        stop(loops)
    print(f"hog: stopped; the loops used {used:.0f} CPU-s in {time.monotonic() - t0:.0f} s; "
          f"command exited {rc}", file=sys.stderr, flush=True)
    return rc if rc >= 0 else 128 - rc


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""What an administrator sees of a running reclaimd, through the commands as typed: `reclaimd
status` (text and --json) while the daemon warms up on a busy machine and after a dry run would
have reclaimed, a second daemon on the same status socket refused, `status` as a user who may
not reach the socket, and options given to a subcommand they mean nothing to.

The daemon runs on a fixture machine (--proc-root, --cgroup-root): a thread here advances its
/proc/stat, regular files stand in for memory.reclaim, drop_caches and compact_memory, so the
test decides how busy the machine is and sees every write. The same binary on real kernels is
the VM tests' subject.

Usage: operate_test.py --binary BUILD/controller/reclaimd
"""
import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading

from common import Checks, require_root, run, wait_for

POLICY = "mode: gradual\nidle:\n  grace: 3s\n  interval: 1s\n  sample_period: 100ms\n"


def meminfo(total, free, active_file, inactive_file, sreclaimable):
    kb = lambda mib: mib * 1024  # noqa: E731
    return "".join(f"{k}: {v} kB\n" for k, v in [
        ("MemTotal", kb(total)), ("MemFree", kb(free)), ("MemAvailable", kb(free + active_file + inactive_file)),
        ("Buffers", 10240), ("Cached", kb(active_file + inactive_file)), ("SwapCached", 0),
        ("Active", kb(active_file + 100)), ("Inactive", kb(inactive_file + 50)),
        ("Active(anon)", 102400), ("Inactive(anon)", 51200), ("Active(file)", kb(active_file)),
        ("Inactive(file)", kb(inactive_file)), ("Unevictable", 0), ("Mlocked", 0), ("SwapTotal", 0),
        ("SwapFree", 0), ("Dirty", 8), ("Shmem", 2048), ("KReclaimable", kb(sreclaimable)),
        ("Slab", kb(sreclaimable + 20)), ("SReclaimable", kb(sreclaimable)), ("SUnreclaim", 20480)])


class Machine:
    """A fixture machine under `root`: proc/ and cg/ (the cgroup root). Every 20 ms its
    /proc/stat gains `busy` busy ticks against 100 idle ones."""

    def __init__(self, root):
        self.root, self.busy, self._stop = root, 0, threading.Event()
        self.write("proc/meminfo", meminfo(2048, 1000, 300, 200, 50))
        self.write("proc/pressure/memory", "some avg10=0.00 avg60=0.00 avg300=0.00 total=0\n"
                   "full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n")
        for f in ("proc/sys/vm/drop_caches", "proc/sys/vm/compact_memory", "cg/memory.reclaim"):
            self.write(f, "")
        self.write("proc/self/cgroup", "0::/\n")
        self.write("cg/cgroup.controllers", "cpu io memory pids\n")
        self.write("cg/cpu.stat", "usage_usec 0\n")
        self._stat(0, 0)
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def path(self, rel):
        return os.path.join(self.root, rel)

    def write(self, rel, text):
        # In place, as the kernel's files change: the daemon keeps /proc/stat open and rereads
        # it, so a file replaced by rename would never change for it. One write, then the
        # length (a line only grows): a reader sees the old text or the new.
        os.makedirs(os.path.dirname(self.path(rel)), exist_ok=True)
        fd = os.open(self.path(rel), os.O_WRONLY | os.O_CREAT, 0o644)
        try:
            data = text.encode()
            os.pwrite(fd, data, 0)
            os.ftruncate(fd, len(data))
        finally:
            os.close(fd)

    def read(self, rel):
        with open(self.path(rel)) as f:
            return f.read()

    def _stat(self, busy, idle):
        self.write("proc/stat", f"cpu  {busy} 0 0 {idle} 0 0 0 0 0 0\ncpu0 {busy} 0 0 {idle} 0 0 0 0 0 0\n"
                   "ctxt 98765\nbtime 1700000000\nprocesses 4242\nprocs_running 1\nprocs_blocked 0\n")

    def _run(self):
        busy = idle = 0
        while not self._stop.wait(0.02):
            busy, idle = busy + self.busy, idle + 100
            self._stat(busy, idle)

    def stop(self):
        self._stop.set()
        self._thread.join()




def status(binary, sock, *extra):
    return run([binary, "status", "--socket", sock, *extra])


def status_json(text):
    """`status --json`'s object, or {} for anything else (the checks then fail, showing it)."""
    try:
        doc = json.loads(text)
    except ValueError:
        return {}
    return doc if isinstance(doc, dict) else {}


def numbers(doc):
    """Every number in a JSON document, nested ones included."""
    if isinstance(doc, dict):
        return [n for v in doc.values() for n in numbers(v)]
    if isinstance(doc, list):
        return [n for v in doc for n in numbers(v)]
    return [doc] if isinstance(doc, (int, float)) and not isinstance(doc, bool) else []


def check_warmup(c, binary, sock):
    """A busy machine in the first grace window: the real busy share beside the threshold, and
    the cache that waits (the fixture's 550 MiB above the 128 MiB floor), not 0."""
    def warm():
        r = status(binary, sock)
        m = re.search(r"machine: warmup \(busy ([0-9.]+)% so far, idle at or under 0.5%\)", r.stdout)
        return (r, float(m.group(1))) if m and float(m.group(1)) > 0 else None
    got = wait_for(warm, 2.5)
    r = got[0] if got else status(binary, sock)
    c.ok(got and 15 <= got[1] <= 25, "status during warm-up shows the busy share so far (20 % here) and the threshold",
         r.stdout + r.stderr)
    c.ok(re.search(r"^reclaimable: 422\.0 MiB above the machine's floor$", r.stdout, re.M)
         and re.search(r"^target /: .*, floor 128\.0 MiB, reclaimable 422\.0 MiB,", r.stdout, re.M),
         "status during warm-up shows what is reclaimable, in one unit", r.stdout)
    c.ok(not re.search(r"[0-9]KiB|[0-9]MiB|[0-9]GiB", r.stdout), "sizes as number, space, unit", r.stdout)
    j = status(binary, sock, "--json")
    doc = status_json(j.stdout)
    c.ok(j.returncode == 0 and doc.get("idle_state") == "warmup" and 0.15 <= doc.get("busy_ratio", -1) <= 0.25
         and doc.get("busy_threshold_ratio") == 0.005 and doc.get("waiting_bytes") == 422 << 20,
         "status --json during warm-up: idle_state warmup, busy_ratio about 0.2 beside busy_threshold_ratio 0.005, "
         "waiting_bytes 422 MiB", j.stdout[:1500] + j.stderr)
    noisy = [n for n in numbers(doc) if isinstance(n, float) and len(repr(n).split(".")[-1]) > 6]
    c.ok(doc and not noisy, "status --json: no number with more than six decimals", f"{noisy}\n{j.stdout[:1500]}")


def check_dry_run(c, binary, sock, machine):
    """Idle past the grace: a dry run counts what it would have reclaimed and writes nothing."""
    machine.busy = 0

    def would():
        r = status(binary, sock)
        return r if re.search(r"would reclaim: [1-9][0-9.]* [KMG]iB in [1-9]", r.stdout) else None
    r = wait_for(would, 15) or status(binary, sock)
    c.ok(re.search(r"last action: \S+ would reclaim [1-9]", r.stdout),
         "status after a dry run says what it would have reclaimed, and its last action", r.stdout + r.stderr)
    c.ok(re.search(r"^reclaimed: 0 B in 0 steps", r.stdout, re.M), "a dry run counts nothing as reclaimed", r.stdout)
    j = status(binary, sock, "--json")
    doc = status_json(j.stdout)
    c.ok(doc.get("dry_run") is True and doc.get("would_reclaim_bytes", 0) > 0,
         "status --json: dry_run true, would_reclaim_bytes counted", j.stdout[:1500])
    c.equal(machine.read("cg/memory.reclaim").split()[:1], ["0"],
            "memory.reclaim saw only the probe's zero-byte request")
    c.equal((machine.read("proc/sys/vm/drop_caches"), machine.read("proc/sys/vm/compact_memory")), ("", ""),
            "drop_caches and compact_memory untouched")


def check_second_daemon(c, argv, binary, sock):
    second = subprocess.run(argv, capture_output=True, text=True, timeout=15)
    c.ok(second.returncode == 75 and "already" in (second.stdout + second.stderr).lower(),
         "a second daemon on the same status socket refuses to start (exit 75, says why)",
         f"exit {second.returncode}\n{second.stdout}{second.stderr}")
    c.equal(status(binary, sock).returncode, 0, "the first daemon still answers status")


def check_not_root(c, tmp, binary, sock):
    """A user who may not reach the socket is told so, not that nothing runs."""
    shutil.copy(binary, os.path.join(tmp, "bin", "reclaimd"))  # reachable by nobody wherever the build is
    r = run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
             os.path.join(tmp, "bin", "reclaimd"), "status", "--socket", sock])
    c.ok(r.returncode == 77 and "permission denied" in (r.stdout + r.stderr).lower(),
         "status as nobody: exit 77, permission denied", f"exit {r.returncode}\n{r.stdout}{r.stderr}")


def check_options(c, binary):
    """Each subcommand takes its own options; one given where it means nothing is an error."""
    for argv, option in ((["status", "--config", "/nonexistent"], "--config"),
                         (["probe", "--metrics-listen", "0.0.0.0:1"], "--metrics-listen"),
                         (["check-config", "policy.yaml", "--dry-run"], "--dry-run")):
        r = run([binary, *argv])
        c.ok(r.returncode == 64 and option in r.stdout + r.stderr,
             f"`reclaimd {argv[0]} {option}` is refused (exit 64, naming the option)",
             f"exit {r.returncode}\n{r.stdout}{r.stderr}")
    h = run([binary, "run", "--help"]).stdout
    c.ok(all(o in h for o in ("--dry-run", "--config", "--status-socket", "--metrics-listen")),
         "`reclaimd run --help` lists the daemon's options", h)
    h = run([binary, "status", "--help"]).stdout
    c.ok("--json" in h and "--dry-run" not in h, "`reclaimd status --help` lists status's own", h)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--binary", required=True)
    args = ap.parse_args()
    require_root("deploy_operate")
    c = Checks("deploy_operate")
    tmp = tempfile.mkdtemp(prefix="reclaimd-operate-")
    os.chmod(tmp, 0o755)
    os.makedirs(os.path.join(tmp, "bin"))
    os.makedirs(os.path.join(tmp, "run"), mode=0o700)  # the socket's directory: root's alone
    machine = Machine(os.path.join(tmp, "m"))
    machine.busy = 25  # 25 busy ticks against 100 idle: 20 %
    with open(os.path.join(tmp, "policy.yaml"), "w") as f:
        f.write(POLICY)
    sock, log_path = os.path.join(tmp, "run", "status.sock"), os.path.join(tmp, "log")
    argv = [args.binary, "run", "--proc-root", machine.path("proc"), "--cgroup-root", machine.path("cg"),
            "--config", os.path.join(tmp, "policy.yaml"), "--status-socket", sock, "--dry-run"]
    log = open(log_path, "w")
    daemon = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT)
    try:
        if c.ok(wait_for(lambda: "event=start" in open(log_path).read(), 10), "the daemon starts",
                open(log_path).read()):
            check_warmup(c, args.binary, sock)
            check_second_daemon(c, argv, args.binary, sock)
            check_not_root(c, tmp, args.binary, sock)
            check_dry_run(c, args.binary, sock, machine)
        check_options(c, args.binary)
    finally:
        daemon.send_signal(signal.SIGTERM)
        c.equal(daemon.wait(timeout=10), 0, "the daemon exits 0 on SIGTERM")
        machine.stop()
        log.close()
    if c.failures:
        print(open(log_path).read()[-3000:])
    shutil.rmtree(tmp, ignore_errors=True)
    return c.done()


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""deploy/wsl/install.sh's /etc/wsl.conf edits (in a scratch root), and its boot command run for
real with the built binary: it must return at once and leave reclaimd running in the
background, logging to the file.

Usage: wsl_test.py --binary BUILD/controller/reclaimd
"""
import argparse
import os
import re
import shutil
import signal
import sys
import tempfile
import time

from common import REPO, Checks, run

SCRIPT = os.path.join(REPO, "deploy", "wsl", "install.sh")


def boot_command():
    m = re.search(r"^BOOT_CMD='([^']*)'", open(SCRIPT).read(), re.M)
    return m.group(1)


def edit(root, method, before):
    conf = os.path.join(root, "etc", "wsl.conf")
    if before is None:
        if os.path.exists(conf):
            os.remove(conf)
    else:
        os.makedirs(os.path.dirname(conf), exist_ok=True)
        open(conf, "w").write(before)
    r = run(["bash", SCRIPT, "--root", root, f"--{method}"])
    return r, (open(conf).read() if os.path.exists(conf) else None)


def check_edits(c, root):
    cmd = boot_command()
    ours = f"command = {cmd}"
    cases = [
        ("no wsl.conf", None, f"[boot]\n{ours}\n"),
        ("systemd off, other sections kept",
         "[network]\nhostname = box\n\n[boot]\nsystemd=false\n\n[user]\ndefault=me\n",
         f"[network]\nhostname = box\n\n[boot]\nsystemd=false\n\n{ours}\n[user]\ndefault=me\n"),
        ("an existing command is kept, ours appended",
         "[boot]\ncommand = service cron start\n", f"[boot]\ncommand = service cron start; {cmd}\n"),
        ("a quoted command stays quoted",
         '[boot]\ncommand = "service cron start"\n', f'[boot]\ncommand = "service cron start; {cmd}"\n'),
        ("ours already there: unchanged", f"[boot]\n{ours}\n", f"[boot]\n{ours}\n"),
    ]
    for name, before, want in cases:
        r, got = edit(root, "boot-command", before)
        c.ok(r.returncode == 0, f"--boot-command ({name}) exits 0", r.stderr)
        c.equal(got, want, f"--boot-command: {name}")
        r, again = edit(root, "boot-command", got)
        c.equal(again, want, f"--boot-command twice: {name}, unchanged")
    for name, before, want in [
        ("ours alone is removed", f"[boot]\nsystemd=true\n{ours}\n", "[boot]\nsystemd=true\n"),
        ("an appended one is taken off", f"[boot]\ncommand = service cron start; {cmd}\n",
         "[boot]\ncommand = service cron start\n"),
        ("nothing of ours: unchanged", "[boot]\nsystemd=true\n", "[boot]\nsystemd=true\n"),
    ]:
        r, got = edit(root, "systemd", before)
        c.equal(got, want, f"--systemd: {name}")


def check_boot_command(c, binary, tmp):
    """The boot line as WSL runs it (/bin/sh -c, as root), with the built binary in dry-run mode
    and scratch paths for the policy, the log and the socket directory."""
    log = os.path.join(tmp, "reclaimd.log")
    rundir = os.path.join(tmp, "run-reclaimd")
    # RECLAIMD_OPTIONS from /etc/default/reclaimd, as the unit's EnvironmentFile= gives them
    default = os.path.join(tmp, "default-reclaimd")
    with open(default, "w") as f:
        f.write('RECLAIMD_OPTIONS="--log-level debug"\n')
    cmd = (boot_command().replace("/usr/sbin/reclaimd run", f"{binary} run --dry-run")
           .replace("/etc/reclaimd/policy.yaml", os.path.join(REPO, "deploy", "policy.yaml"))
           .replace("/etc/default/reclaimd", default)
           .replace("/var/log/reclaimd.log", log).replace("/run/reclaimd", rundir))
    t0 = time.monotonic()
    r = run(["/bin/sh", "-c", cmd], timeout=10)
    took = time.monotonic() - t0
    c.ok(r.returncode == 0 and took < 2, f"the boot command returns at once ({took:.2f} s)", r.stderr)
    c.ok(os.path.isdir(rundir) and (os.stat(rundir).st_mode & 0o777) == 0o700, "it makes the socket directory, 0700")
    pids = []
    for _ in range(50):
        pids = [int(p) for p in os.listdir("/proc") if p.isdigit() and log_owner(p, binary, log)]
        if pids and os.path.exists(log) and "event=start" in open(log).read():
            break
        time.sleep(0.1)
    c.equal(len(pids), 1, "one reclaimd runs in the background")
    c.ok(os.path.exists(log) and "event=start" in open(log).read(), "it logs to the file")
    c.ok(os.path.exists(log) and " debug event=" in open(log).read(),
         "with the options /etc/default/reclaimd sets (--log-level debug)")
    for pid in pids:
        c.ok(os.getsid(pid) == pid, "in a session of its own (setsid), detached from the boot command")
        os.kill(pid, signal.SIGTERM)
        for _ in range(50):
            if not os.path.exists(f"/proc/{pid}"):
                break
            time.sleep(0.1)
        c.ok(not os.path.exists(f"/proc/{pid}"), "and stops on SIGTERM")


def log_owner(pid, binary, log):
    """Whether process pid is the reclaimd this test started (its binary, writing to our log)."""
    try:
        return os.readlink(f"/proc/{pid}/exe") == binary and os.readlink(f"/proc/{pid}/fd/2") == log
    except OSError:
        return False


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--binary", required=True)
    a = p.parse_args()
    c = Checks("WSL set-up")
    r = run(["bash", "-n", SCRIPT])
    c.ok(r.returncode == 0, "bash -n accepts deploy/wsl/install.sh", r.stderr)
    tmp = tempfile.mkdtemp(prefix="reclaimd-wsl-")
    try:
        check_edits(c, os.path.join(tmp, "root"))
        check_boot_command(c, os.path.realpath(a.binary), tmp)
    finally:
        shutil.rmtree(tmp)
    return c.done()


if __name__ == "__main__":
    sys.exit(main())

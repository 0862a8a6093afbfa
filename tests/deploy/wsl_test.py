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

from common import REPO, Checks, run, wait_for

SCRIPT = os.path.join(REPO, "deploy", "wsl", "install.sh")
START = os.path.join(REPO, "deploy", "wsl", "wsl-start")
LOG_KIB = 8  # a bound the test fills in seconds


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


def start_script(tmp, binary, log, rundir, default):
    """deploy/wsl/wsl-start with the built binary and scratch paths for the policy, the log, the
    socket directory and /etc/default/reclaimd."""
    text = open(START).read()
    for var, value in (("BIN", binary), ("POLICY", os.path.join(REPO, "deploy", "policy.yaml")), ("LOG", log),
                       ("RUNDIR", rundir), ("DEFAULTS", default)):
        text, n = re.subn(rf"^{var}=.*$", f"{var}={value}", text, flags=re.M)
        assert n == 1, var
    path = os.path.join(tmp, "wsl-start")
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, 0o755)
    return path


def ours(binary, rundir):
    """The reclaimd processes this test started: its binary, with our status socket."""
    pids = []
    for p in filter(str.isdigit, os.listdir("/proc")):
        try:
            if os.readlink(f"/proc/{p}/exe") == binary and rundir in open(f"/proc/{p}/cmdline").read():
                pids.append(int(p))
        except OSError:
            pass
    return pids


def session(sid):
    """The processes still in session sid."""
    out = []
    for p in filter(str.isdigit, os.listdir("/proc")):
        try:
            if os.getsid(int(p)) == sid:
                out.append(int(p))
        except OSError:
            pass
    return out


def check_boot_command(c, binary, tmp):
    """The boot command as WSL runs it (/bin/sh -c, as root): wsl-start, with the built binary in
    dry-run mode, RECLAIMD_OPTIONS and a tiny log bound from a scratch /etc/default/reclaimd."""
    log = os.path.join(tmp, "reclaimd.log")
    rundir = os.path.join(tmp, "run-reclaimd")
    default = os.path.join(tmp, "default-reclaimd")
    with open(default, "w") as f:
        f.write(f'RECLAIMD_OPTIONS="--dry-run --log-level debug --status-socket {rundir}/status.sock"\n'
                f"RECLAIMD_LOG_KIB={LOG_KIB}\n")
    script = start_script(tmp, binary, log, rundir, default)
    t0 = time.monotonic()
    r = run(["/bin/sh", "-c", script], timeout=10)
    took = time.monotonic() - t0
    c.ok(r.returncode == 0 and took < 2, f"the boot command returns at once ({took:.2f} s)", r.stderr)
    c.ok(os.path.isdir(rundir) and (os.stat(rundir).st_mode & 0o777) == 0o700, "it makes the socket directory, 0700")
    started = wait_for(lambda: os.path.exists(log) and "event=start" in open(log).read() and ours(binary, rundir), 10)
    pids = ours(binary, rundir)
    c.equal(len(pids), 1, "one reclaimd runs in the background")
    c.ok(started, "it logs to the file")
    c.ok(os.path.exists(log) and " debug event=" in open(log).read(),
         "with the options /etc/default/reclaimd sets (--log-level debug)")
    if len(pids) != 1:
        return
    pid = pids[0]
    c.ok(os.getsid(pid) != os.getsid(0), "in a session of its own (setsid), detached from the boot command")
    check_log_bound(c, pid, log)
    sid = os.getsid(pid)
    os.kill(pid, signal.SIGTERM)
    c.ok(wait_for(lambda: not session(sid), 5), "SIGTERM stops it, and its log writer with it", str(session(sid)))


def check_log_bound(c, pid, log):
    """Reloads make log lines: the log moves to .1 at the bound and goes on in a new file."""
    limit = LOG_KIB * 1024
    for _ in range(400):
        os.kill(pid, signal.SIGHUP)
        time.sleep(0.01)
        if os.path.exists(log + ".1"):
            break
    rotated = wait_for(lambda: os.path.exists(log + ".1"), 5)
    c.ok(rotated, f"the log moves to reclaimd.log.1 at RECLAIMD_LOG_KIB ({LOG_KIB} KiB)")
    if not rotated:
        return
    size = os.path.getsize(log + ".1")
    c.ok(limit <= size < limit + 4096, f"reclaimd.log.1 holds the bound and at most one more line ({size} bytes)")
    before = os.path.getsize(log) if os.path.exists(log) else 0
    os.kill(pid, signal.SIGHUP)
    c.ok(wait_for(lambda: os.path.exists(log) and os.path.getsize(log) > before, 5),
         "and reclaimd.log goes on with the lines after it")
    for _ in range(600):  # enough lines to fill both files again: still two files, still bounded
        os.kill(pid, signal.SIGHUP)
        time.sleep(0.005)
    time.sleep(1)
    total = sum(os.path.getsize(p) for p in (log, log + ".1") if os.path.exists(p))
    c.ok(total < 2 * limit + 4096 and not os.path.exists(log + ".2"),
         f"the two files together stay under twice the bound ({total} bytes after more reloads)")


def check_docker_desktop(c, root):
    """install.sh refuses Docker Desktop's own distributions and says where reclaimd goes."""
    os.makedirs(os.path.join(root, "etc"), exist_ok=True)
    release = os.path.join(root, "etc", "os-release")
    with open(release, "w") as f:
        f.write('PRETTY_NAME="Docker Desktop"\n')
    r = run(["bash", SCRIPT, "--root", root, "--boot-command"])
    c.ok(r.returncode == 64 and "install reclaimd in your" in r.stderr,
         "install.sh refuses Docker Desktop's distribution (its os-release)", r.stdout + r.stderr)
    with open(release, "w") as f:
        f.write('PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"\n')
    r = run(["bash", SCRIPT, "--root", root, "--boot-command"],
            env=dict(os.environ, WSL_DISTRO_NAME="docker-desktop-data"))
    c.ok(r.returncode == 64, "and docker-desktop-data (WSL_DISTRO_NAME)", r.stdout + r.stderr)
    r = run(["bash", SCRIPT, "--root", root, "--boot-command"], env=dict(os.environ, WSL_DISTRO_NAME="Debian"))
    c.ok(r.returncode == 0, "a user's distribution is set up", r.stdout + r.stderr)
    readme = open(os.path.join(REPO, "deploy", "wsl", "README.md")).read()
    for needed in ("docker-desktop", "instanceIdleTimeout", "one kernel"):
        c.ok(needed in readme, f"deploy/wsl/README.md covers Docker Desktop: {needed}")


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
        check_docker_desktop(c, os.path.join(tmp, "dd-root"))
        check_boot_command(c, os.path.realpath(a.binary), tmp)
    finally:
        shutil.rmtree(tmp)
    return c.done()


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""The unit under a real systemd 252: boots this machine's own OS in a systemd-nspawn container
(--volatile=yes: the host's /usr read-only, /etc and /var in memory, nothing written back) and
runs deploy/systemd/reclaimd.service there.

1. Its hardening, exactly, around a check script instead of the daemon: the files reclaimd
   writes take writes (compact_memory; 4 to drop_caches, which only silences its log line; a
   root-owned 0200 cgroup file, the permission check memory.reclaim gets; memory.reclaim itself
   with a zero request where the cgroup2 root has it), and everything else refuses (other
   sysctls, sysfs, /etc, /usr, /home). The container's /proc/sys and /sys are made writable
   (SYSTEMD_NSPAWN_API_VFS_WRITABLE), so the unit's sandbox is the only thing in the way.
2. The unit itself with the built binary (its own ExecStart= with the binary's path replaced,
   --dry-run given through RECLAIMD_OPTIONS in /etc/default/reclaimd, so nothing is reclaimed,
   and a 3 s watchdog): it must run with the options from that file, get READY=1, stay active
   past the watchdog (WATCHDOG=1 pings), reload on `systemctl reload` and stop cleanly, and
   register the default policy's PSI trigger without CAP_SYS_RESOURCE, saying nothing at warning;
   `reclaimd probe` under the same sandbox says that trigger registers.
3. Its condition: with /proc/sys/vm/drop_caches read-only, as in any container that does not
   open /proc/sys, `systemctl start` skips the unit ("condition failed"): not active, not failed.

Usage: unit_sandbox_test.py --binary BUILD/controller/reclaimd
"""
import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

from common import REPO, Checks, require_root, run

UNIT = os.path.join(REPO, "deploy", "systemd", "reclaimd.service")
BIN = "/run/reclaimd-test/reclaimd"
# Service settings that belong to the daemon's life cycle, not to its sandbox.
LIFECYCLE = ("Type", "NotifyAccess", "ExecStart", "ExecReload", "WatchdogSec", "Restart", "RestartSec",
             "RestartPreventExitStatus")

# The cgroup_0200_file and sysfs lines are each one line of the script, in two literals to keep
# within 120 columns.
CHECK_SCRIPT = (r"""#!/bin/sh
try() { if sh -c "$2" 2>/dev/null; then echo "RESULT $1 written"; else echo "RESULT $1 refused"; fi; }
# No awk: it is an alternatives link, and the container's /etc is empty.
field() { sed -n "s/^$1:[[:space:]]*//p" /proc/self/status; }
cg=$(sed -n 's/^[0-9]* [0-9]* [^ ]* [^ ]* \([^ ]*\) .* - cgroup2 .*/\1/p' /proc/self/mountinfo | head -n 1)
try compact_memory 'echo 1 > /proc/sys/vm/compact_memory'
try drop_caches 'echo 4 > /proc/sys/vm/drop_caches'
try cgroup_0200_file "mkdir $cg/reclaimd-sandbox && echo 1 > $cg/reclaimd-sandbox/cgroup.kill; """
                r"""r=\$?; rmdir $cg/reclaimd-sandbox; exit \$r"
if [ -e "$cg/memory.reclaim" ]; then try memory_reclaim "echo 0 > $cg/memory.reclaim"; fi
try run_reclaimd 'touch /run/reclaimd/x && rm /run/reclaimd/x'
try vm_sysctl 'cat /proc/sys/vm/overcommit_ratio > /proc/sys/vm/overcommit_ratio'
try kernel_sysctl 'cat /proc/sys/kernel/sched_child_runs_first > /proc/sys/kernel/sched_child_runs_first'
try sysfs 'cat /sys/kernel/mm/transparent_hugepage/khugepaged/defrag """
                r"""> /sys/kernel/mm/transparent_hugepage/khugepaged/defrag'
try etc 'touch /etc/reclaimd-sandbox'
try usr 'touch /usr/reclaimd-sandbox'
try home 'ls /root /home'
cat /proc/stat /proc/meminfo > /dev/null && echo "RESULT proc_read written"
echo "RESULT cap_eff $(field CapEff)"
echo "RESULT no_new_privs $(field NoNewPrivs)"
echo "RESULT seccomp $(field Seccomp)"
echo "RESULT uid_map $(tr -s ' ' / < /proc/self/uid_map | sed 's|^/||')"
""")


def unit_exec_start():
    """The unit's own ExecStart= command line."""
    return [line.partition("=")[2] for line in open(UNIT).read().splitlines() if line.startswith("ExecStart=")][-1]


def service_lines(extra):
    """The unit with its [Service] life-cycle settings replaced by extra."""
    out = []
    for line in open(UNIT).read().splitlines():
        key = line.partition("=")[0].strip()
        if key in LIFECYCLE:
            continue
        out.append(line)
        if line.strip() == "[Service]":
            out.extend(extra)
    return "\n".join(out) + "\n"


class Container:
    """This machine's OS booted under systemd-nspawn; commands run inside with nsenter."""

    def __init__(self, log):
        self.name = f"reclaimd-test-{os.getpid()}"
        self.log = open(log, "w")
        env = dict(os.environ, SYSTEMD_NSPAWN_API_VFS_WRITABLE="1")
        self.proc = subprocess.Popen(
            ["systemd-nspawn", "-D", "/", "--volatile=yes", "--boot", "--register=no", "--keep-unit",
             f"--machine={self.name}", "--console=passive", "--", "systemd.firstboot=off"],
            stdout=self.log, stderr=subprocess.STDOUT, env=env)
        self.leader = None
        deadline = time.monotonic() + 30
        # nspawn forks helpers before the container's init; wait for systemd itself.
        while time.monotonic() < deadline and self.proc.poll() is None and self.leader is None:
            for pid in run(["pgrep", "-P", str(self.proc.pid)]).stdout.split():
                try:
                    if open(f"/proc/{pid}/comm").read().strip() == "systemd":
                        self.leader = int(pid)
                except OSError:
                    pass
            time.sleep(0.2)
        self.root = f"/proc/{self.leader}/root" if self.leader else None

    def sh(self, command, timeout=60):
        return run(["nsenter", "-t", str(self.leader), "-a", "sh", "-c", command], timeout=timeout)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)  # nspawn shuts the container down cleanly
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--binary", required=True)
    a = p.parse_args()
    require_root("unit sandbox test")
    c = Checks("unit under systemd-nspawn")
    if not shutil.which("systemd-nspawn"):
        c.ok(False, "systemd-nspawn is installed (package systemd-container, tests/packages.txt)")
        return c.done()
    # nspawn leaves empty bookkeeping directories behind; remove those it creates.
    nspawn_dirs = [d for d in ("/run/systemd/nspawn/propagate", "/run/systemd/nspawn", "/run/systemd/nspawn-root")
                   if not os.path.exists(d)]
    tmp = tempfile.mkdtemp(prefix="reclaimd-nspawn-")
    box = Container(os.path.join(tmp, "nspawn.log"))
    try:
        if not c.ok(box.leader, "systemd-nspawn boots this machine's OS", open(box.log.name).read()):
            return c.done()
        # `--wait` fails at once while PID 1's bus socket does not exist yet (a slow boot on
        # a loaded host): wait for the socket first.
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline and not os.path.exists(box.root + "/run/systemd/private"):
            time.sleep(0.5)
        state = box.sh("systemctl is-system-running --wait", timeout=120).stdout.strip()
        c.ok(state in ("running", "degraded"), f"systemd in the container is up ({state})",
             box.sh("systemctl --failed --no-pager").stdout)
        print("      " + box.sh("systemctl --version | head -1").stdout.strip())

        root = box.root
        os.makedirs(root + os.path.dirname(BIN))
        shutil.copy(a.binary, root + BIN)
        with open(root + "/run/reclaimd-test/check.sh", "w") as f:
            f.write(CHECK_SCRIPT)
        os.chmod(root + "/run/reclaimd-test/check.sh", 0o755)
        os.makedirs(root + "/etc/reclaimd")
        shutil.copy(os.path.join(REPO, "deploy", "policy.yaml"), root + "/etc/reclaimd/policy.yaml")
        units = root + "/run/systemd/system"
        with open(units + "/reclaimd-sandbox-check.service", "w") as f:
            f.write(service_lines(["Type=oneshot", "ExecStart=/run/reclaimd-test/check.sh"]))
        with open(units + "/reclaimd-sandbox-probe.service", "w") as f:
            f.write(service_lines(["Type=oneshot", f"ExecStart={BIN} probe --config /etc/reclaimd/policy.yaml"]))
        with open(units + "/reclaimd.service", "w") as f:
            f.write(service_lines(["Type=notify", "NotifyAccess=main", "WatchdogSec=3s", "TimeoutStartSec=15s",
                                   "ExecReload=/bin/kill -HUP $MAINPID",
                                   "ExecStart=" + unit_exec_start().replace("/usr/sbin/reclaimd", BIN)]))
        os.makedirs(root + "/etc/default", exist_ok=True)
        with open(root + "/etc/default/reclaimd", "w") as f:
            f.write('RECLAIMD_OPTIONS="--dry-run --log-level debug"\n')
        box.sh("systemctl daemon-reload")

        # 1. The sandbox.
        r = box.sh("systemctl start reclaimd-sandbox-check.service; "
                   "journalctl -u reclaimd-sandbox-check.service -o cat --no-pager")
        res = dict((line.split() + [""])[1:3] for line in r.stdout.splitlines() if line.startswith("RESULT "))
        print("      " + " ".join(f"{k}={v}" for k, v in res.items()))
        wanted = ["compact_memory", "drop_caches", "cgroup_0200_file", "run_reclaimd", "proc_read"]
        wanted += ["memory_reclaim"] if "memory_reclaim" in res else []
        for name in wanted:
            c.equal(res.get(name), "written", f"sandbox allows {name}")
        for name in ("vm_sysctl", "kernel_sysctl", "sysfs", "etc", "usr", "home"):
            c.equal(res.get(name), "refused", f"sandbox refuses {name}")
        c.equal(res.get("cap_eff"), "0000000000000000", "no effective capabilities")
        c.equal(res.get("no_new_privs"), "1", "NoNewPrivileges")
        c.equal(res.get("seccomp"), "2", "a seccomp filter")
        c.ok(res.get("uid_map", "0/0/4294967295") != "0/0/4294967295", f"in a user namespace ({res.get('uid_map')})")

        # `reclaimd probe` under the same sandbox: the PSI trigger it reports is the policy's,
        # the one the daemon registers below (300 ms in 2 s, no CAP_SYS_RESOURCE needed).
        r = box.sh("systemctl start reclaimd-sandbox-probe.service; "
                   "journalctl -u reclaimd-sandbox-probe.service -o cat --no-pager")
        line = next((x for x in r.stdout.splitlines() if x.startswith("psi_triggers:")), "")
        print(f"      {line}")
        c.ok(line.startswith("psi_triggers: yes (some 300000 2000000 on "),
             "reclaimd probe under the unit: the policy's PSI trigger registers", r.stdout[-2000:])

        # 2. The daemon under the unit.
        t0 = time.monotonic()
        r = box.sh("systemctl start reclaimd.service", timeout=30)
        c.ok(r.returncode == 0, f"systemctl start: READY=1 within 15 s (took {time.monotonic() - t0:.1f} s)",
             r.stderr + box.sh("journalctl -u reclaimd.service -o cat --no-pager | tail -20").stdout
             + "\n(no READY=1: is sd_notify in this build?)")
        pid = box.sh("systemctl show -p MainPID --value reclaimd.service").stdout.strip()
        argv = box.sh(f"tr '\\0' ' ' < /proc/{pid}/cmdline").stdout.split()
        c.equal(argv[-3:], ["--dry-run", "--log-level", "debug"],
                "ExecStart took RECLAIMD_OPTIONS from /etc/default/reclaimd")
        time.sleep(7)
        c.equal(box.sh("systemctl is-active reclaimd.service").stdout.strip(), "active",
                "still active after 7 s with WatchdogSec=3s (WATCHDOG=1 pings)")
        status = box.sh("systemctl show -p StatusText --value reclaimd.service").stdout.strip()
        c.ok(status, f"STATUS= text: {status!r}")
        r = box.sh("systemctl reload reclaimd.service && sleep 1 && "
                   "journalctl -u reclaimd.service -o cat --no-pager | grep -c 'event=reload'")
        c.ok(r.returncode == 0 and int(r.stdout.strip() or 0) >= 1, "systemctl reload: the daemon reloads", r.stderr)
        sock = box.sh("test -S /run/reclaimd/status.sock && echo yes").stdout.strip()
        print(f"      info: status socket /run/reclaimd/status.sock present: {sock or 'no'}")
        r = box.sh("systemctl stop reclaimd.service; "
                   "systemctl show -p Result -p ExecMainStatus --value reclaimd.service")
        c.equal(r.stdout.split(), ["success", "0"], "systemctl stop: Result=success, exit 0")
        log = box.sh("journalctl -u reclaimd.service -o cat --no-pager").stdout
        events = "\n".join(line for line in log.splitlines() if "event=" in line)
        c.ok(events and not re.search(r"Permission denied|Operation not permitted|Read-only file system", events),
             "the daemon's log has no EACCES/EPERM/EROFS", log[-3000:])
        # The default policy's 2 s window is one the kernel takes without CAP_SYS_RESOURCE,
        # which the unit does not grant: the trigger registers and nothing is said at warning.
        warned = box.sh("journalctl -u reclaimd.service -p warning -o cat --no-pager").stdout
        c.ok("event=pressure_watch scope=machine mode=trigger" in events and "pressure_watch" not in warned,
             "the default pressure trigger registers under the unit, with no warning", events[-2000:] + warned)

        # 3. The condition: drop_caches read-only (a bind mount of its own) skips the unit.
        ro = "/proc/sys/vm/drop_caches"
        r = box.sh(f"mount --bind {ro} {ro} && mount -o remount,bind,ro {ro}")
        if c.ok(r.returncode == 0, f"{ro} made read-only in the container", r.stderr):
            r = box.sh("systemctl start reclaimd.service; "
                       "systemctl show -p ConditionResult -p ActiveState -p Result reclaimd.service")
            props = dict(line.partition("=")[::2] for line in r.stdout.splitlines())
            c.equal(props, {"ConditionResult": "no", "ActiveState": "inactive", "Result": "success"},
                    "read-only drop_caches: the unit is skipped by its condition, not failed")
            box.sh(f"umount {ro}")
    finally:
        box.stop()
        shutil.rmtree(tmp)
        for d in nspawn_dirs:
            try:
                os.rmdir(d)
            except OSError:
                pass
    return c.done()


if __name__ == "__main__":
    sys.exit(main())

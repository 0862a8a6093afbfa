#!/usr/bin/env python3
"""Static checks of deploy/systemd/reclaimd.service and its example drop-ins.

- the settings the daemon and the README rely on (Type=notify, ExecStart, exit codes, paths);
- `systemd-analyze verify` of the unit alone and with each example drop-in, with the built
  binary and man page standing in for the installed ones: no error and no warning at all;
- `systemd-analyze security --offline=true`: the unit's exposure at most MAX_EXPOSURE, and every
  figure equal to the one deploy/README.md states.

Usage: systemd_unit_test.py --binary BUILD/controller/reclaimd --man BUILD/deploy/reclaimd.8.gz
"""
import argparse
import os
import re
import shutil
import sys
import tempfile

from common import REPO, Checks, run

UNIT = os.path.join(REPO, "deploy", "systemd", "reclaimd.service")
EXAMPLES = os.path.join(REPO, "deploy", "systemd", "examples")
README = os.path.join(REPO, "deploy", "README.md")
# The unit's exposure today: any loosening of the hardening fails this test.
MAX_EXPOSURE = 0.7


def parse_unit(path):
    """{(section, key): [values...]} of a unit file, continuation lines joined."""
    settings, section, pending = {}, None, ""
    for raw in open(path):
        line = pending + raw.strip()
        pending = ""
        if line.endswith("\\"):
            pending = line[:-1] + " "
            continue
        if not line or line[0] in "#;":
            continue
        if line.startswith("["):
            section = line.strip("[]")
            continue
        key, _, value = line.partition("=")
        settings.setdefault((section, key.strip()), []).append(value.strip())
    return settings


def check_settings(c):
    s = parse_unit(UNIT)

    def one(key, section="Service"):
        values = s.get((section, key), [])
        return values[-1] if values else None

    c.equal(one("Type"), "notify", "Type=notify")
    c.equal(one("NotifyAccess"), "main", "NotifyAccess=main")
    c.equal(one("WatchdogSec"), "30s", "WatchdogSec=30s")
    c.equal(one("ExecStart"), "/usr/sbin/reclaimd run --config /etc/reclaimd/policy.yaml $RECLAIMD_OPTIONS",
            "ExecStart takes $RECLAIMD_OPTIONS")
    c.equal(one("EnvironmentFile"), "-/etc/default/reclaimd", "EnvironmentFile=-/etc/default/reclaimd")
    default = open(os.path.join(REPO, "deploy", "default", "reclaimd")).read()
    c.ok(re.search(r'^RECLAIMD_OPTIONS=""$', default, re.M), "deploy/default/reclaimd sets RECLAIMD_OPTIONS empty")
    c.equal(one("ConditionPathIsReadWrite", "Unit"), "/proc/sys/vm/drop_caches",
            "ConditionPathIsReadWrite=/proc/sys/vm/drop_caches (a container: skipped, not failed)")
    for name in sorted(os.listdir(EXAMPLES)):
        c.equal(parse_unit(os.path.join(EXAMPLES, name)).get(("Service", "ExecStart")), None,
                f"{name} leaves ExecStart alone (options go in /etc/default/reclaimd)")
    c.equal(one("ExecReload"), "/bin/kill -HUP $MAINPID", "ExecReload sends SIGHUP")
    c.equal(one("Restart"), "on-failure", "Restart=on-failure")
    c.equal(sorted(one("RestartPreventExitStatus").split()), ["64", "66", "69", "73", "78"],
            "no restart on exit 64 (bad option), 66 (unreadable policy), 69 (nothing can reclaim), "
            "73 (status socket path taken) or 78 (invalid policy)")
    c.equal(one("RuntimeDirectory"), "reclaimd", "RuntimeDirectory=reclaimd holds the status socket")
    c.ok(one("MemoryMin") is not None, "MemoryMin= protects reclaimd from its own reclaim")
    adj = int(one("OOMScoreAdjust") or 0)
    c.ok(-1000 < adj < 0, f"OOMScoreAdjust={adj}: spared, not immune")
    c.equal(one("CapabilityBoundingSet"), "", "no capabilities")
    c.equal(one("User"), None, "runs as root (drop_caches is writable by uid 0 only)")
    for key in ("NoNewPrivileges", "ProtectKernelTunables", "PrivateUsers", "PrivateNetwork",
                "PrivateDevices", "ProtectKernelModules", "MemoryDenyWriteExecute"):
        c.equal(one(key), "yes", f"{key}=yes")
    c.equal(one("ProtectSystem"), "strict", "ProtectSystem=strict")
    c.equal(one("ProtectControlGroups"), "no", "ProtectControlGroups=no (memory.reclaim in any cgroup)")
    rw = sorted(p for v in s.get(("Service", "ReadWritePaths"), []) for p in v.split())
    c.equal(rw, ["-/proc/sys/vm/compact_memory", "/proc/sys/vm/drop_caches"],
            "ReadWritePaths= exactly the two sysctl files it writes")
    c.equal(one("WantedBy", "Install"), "multi-user.target", "WantedBy=multi-user.target")


def verify(c, tmp, binary, man_dir, dropin=None):
    """systemd-analyze verify of a copy of the unit (ExecStart= pointing at the built binary),
    plus one drop-in; the built man page answers Documentation=man:reclaimd(8)."""
    d = tempfile.mkdtemp(dir=tmp)
    for src, dst in [(UNIT, os.path.join(d, "reclaimd.service"))] + (
            [(dropin, os.path.join(d, "reclaimd.service.d", os.path.basename(dropin)))] if dropin else []):
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        with open(dst, "w") as f:
            f.write(open(src).read().replace("/usr/sbin/reclaimd", binary))
    env = dict(os.environ, MANPATH=man_dir + ":")
    r = run(["systemd-analyze", "verify", os.path.join(d, "reclaimd.service")], env=env)
    label = "reclaimd.service" + (f" + {os.path.basename(dropin)}" if dropin else "")
    c.ok(r.returncode == 0 and not (r.stdout + r.stderr).strip(),
         f"systemd-analyze verify {label}: no error, no warning", r.stdout + r.stderr)
    return d


def exposure(unit_path):
    r = run(["systemd-analyze", "security", "--offline=true", "--no-pager", unit_path])
    m = re.search(r"Overall exposure level for \S+: (\d+\.\d)", r.stdout)
    return float(m.group(1)) if m else None, r


def readme_figure(label):
    m = re.search(r"^\|\s*`?" + re.escape(label) + r"`?\s*\|\s*\*{0,2}(\d+\.\d)\*{0,2}\s*\|",
                  open(README).read(), re.M)
    return float(m.group(1)) if m else None


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--binary", required=True)
    p.add_argument("--man", required=True, help="the built reclaimd.8.gz")
    a = p.parse_args()
    c = Checks("systemd unit")
    check_settings(c)
    tmp = tempfile.mkdtemp(prefix="reclaimd-unit-")
    try:
        man_dir = os.path.join(tmp, "man")
        os.makedirs(os.path.join(man_dir, "man8"))
        shutil.copy(a.man, os.path.join(man_dir, "man8", "reclaimd.8.gz"))
        d = verify(c, tmp, os.path.abspath(a.binary), man_dir)
        figure, r = exposure(os.path.join(d, "reclaimd.service"))
        c.ok(figure is not None and figure <= MAX_EXPOSURE,
             f"security exposure {figure} at most {MAX_EXPOSURE}", r.stdout[-2000:] + r.stderr)
        # --threshold is in tenths; systemd-analyze itself must agree.
        r = run(["systemd-analyze", "security", "--offline=true", f"--threshold={round(MAX_EXPOSURE * 10)}",
                 os.path.join(d, "reclaimd.service")])
        c.ok(r.returncode == 0, f"systemd-analyze security --threshold={round(MAX_EXPOSURE * 10)} passes", r.stderr)
        c.equal(readme_figure("reclaimd.service"), figure, "deploy/README.md states the unit's exposure")
        for name in sorted(os.listdir(EXAMPLES)):
            d = verify(c, tmp, os.path.abspath(a.binary), man_dir, os.path.join(EXAMPLES, name))
            figure, _ = exposure(os.path.join(d, "reclaimd.service"))
            c.equal(readme_figure(f"reclaimd.service + {name}"), figure,
                    f"deploy/README.md states the exposure with {name}")
    finally:
        shutil.rmtree(tmp)
    return c.done()


if __name__ == "__main__":
    sys.exit(main())

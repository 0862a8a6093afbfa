#!/usr/bin/env python3
"""On real kernels: the machine's floor binds a cgroup target's steps (guest/machinefloor.sh).

Asserts: work.slice, whose rule keeps 16 MiB, is reclaimed, and only there; the machine ends at
its reclaim.floor (set 64 MiB under what it held after the reads) within -3/+8 MiB, although 6.1
frees 15-25 % more than it is asked; work.slice gave at least 48 MiB; no error lines; a clean
exit. Usage: machinefloor_test.py --kernel 6.1 --reclaimd build/controller/reclaimd
"""
import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import scenario  # noqa: E402
import vm  # noqa: E402


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--kernel", required=True, choices=vm.kernels.SERIES)
    p.add_argument("--reclaimd", required=True)
    p.add_argument("--log-dir")
    a = p.parse_args(argv)
    timeline = scenario.Timeline()
    r = vm.run(os.path.join(HERE, "guest", "machinefloor.sh"), kernel=a.kernel,
               add=[(a.reclaimd, "/usr/bin/reclaimd"), (os.path.join(HERE, "guest", "lib.sh"), "/test/lib.sh")],
               data="1x200", timeout=240, log_dir=a.log_dir or f"/tmp/reclaimd-vm-machinefloor-{a.kernel}",
               on_line=timeline.add)
    c = scenario.Checks(f"machine floor over a cgroup target on {a.kernel}")
    c.check(r.code == 0, f"VM ran the scenario ({r.outcome}, exit {r.code}, logs in {r.log_dir})")
    s = timeline.of("machinefloor")
    steps = s.events("reclaim_step")
    cgroups = sorted({e.f.get("cgroup") for e in steps})
    c.check(cgroups == ["work.slice"], f"steps at work.slice only ({cgroups})")
    c.figure(f"{a.kernel} steps: freed MiB / chunks",
             ", ".join(f"{e.f.get('freed_mib')}/{e.f.get('chunks')}" for e in steps))
    floor = s.mark("floor")
    before, after = s.mib("after_fill"), s.mib("after_wait")
    cg_before, cg_after = s.cgroup_mib("after_fill", "work.slice"), s.cgroup_mib("after_wait", "work.slice")
    if c.check(None not in (floor, before, after, cg_before, cg_after), "memory figures and the floor seen"):
        floor_mib = int(floor.f["floor_mib"])
        c.figure(f"{a.kernel} machine reclaimable: after the reads -> at the end (floor)",
                 f"{before:.1f} -> {after:.1f} MiB ({floor_mib} MiB)")
        c.figure(f"{a.kernel} work.slice file cache", f"{cg_before:.1f} -> {cg_after:.1f} MiB")
        c.check(after >= floor_mib - 3, f"the machine kept its floor, less 3 MiB ({after:.1f} of {floor_mib} MiB)")
        c.check(after <= floor_mib + 8, f"and reached it, within 8 MiB ({after:.1f} of {floor_mib} MiB)")
        c.check(cg_before - cg_after >= 48, f"work.slice gave it ({cg_before - cg_after:.1f} MiB)")
    errors = [l.text for l in s.lines if l.kind == "event" and (" error " in l.text or " critical " in l.text)]
    c.check(not errors, f"no error lines ({errors[:2]})")
    ex = s.exit()
    c.check(ex is not None and ex.f.get("code") == "0", f"clean exit on SIGTERM (code {ex and ex.f.get('code')})")
    return 0 if c.report() else 1


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""On real kernels: per-cgroup rules and idleness in a 6.1, 6.12 or newest VM (guest/percgroup.sh).

Asserts: idle.slice (idle source cgroup) is reclaimed to its 32 MiB floor within -10 %/+5 %,
starting within 1 s of its own grace period (from the end of its reads) although the machine is
busy; busy.slice (busy, idle source cgroup) and kept.slice (disabled) keep >= 95 % of their
cache; nothing is written at the root; cgroups created and removed meanwhile cause no error; a
clean exit; the run, recorded (`reclaimd record`), replays to the recorded commands, the same twice.
Usage: percgroup_test.py --kernel 6.12 --reclaimd build/controller/reclaimd
"""
import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import canary  # noqa: E402
import scenario  # noqa: E402
import vcpuwait  # noqa: E402
import vm  # noqa: E402

FLOOR_MIB = 32


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--kernel", required=True, choices=vm.kernels.SERIES)
    p.add_argument("--reclaimd", required=True)
    p.add_argument("--grace", type=int, default=15)
    p.add_argument("--log-dir")
    a = p.parse_args(argv)
    timeline, host = scenario.Timeline(), vcpuwait.VcpuWait()
    r = vm.run(os.path.join(HERE, "guest", "percgroup.sh"), kernel=a.kernel,
               add=[(a.reclaimd, "/usr/bin/reclaimd"), (os.path.join(HERE, "guest", "lib.sh"), "/test/lib.sh")],
               data="3x100", env={"GRACE": str(a.grace)}, timeout=300,
               log_dir=a.log_dir or f"/tmp/reclaimd-vm-percgroup-{a.kernel}", on_line=timeline.add,
               on_qemu_start=host.attach)
    host.stop()
    c = scenario.Checks(f"per-cgroup on {a.kernel}")
    c.check(r.code == 0, f"VM ran the scenario ({r.outcome}, exit {r.code}, logs in {r.log_dir})")
    s = timeline.of("percgroup")
    steps = s.events("reclaim_step")
    by = {}
    for e in steps:
        by.setdefault(e.f.get("cgroup"), []).append(e)
    c.check("idle.slice" in by, f"idle.slice was reclaimed ({len(by.get('idle.slice', []))} steps)")
    for other in ("busy.slice", "kept.slice", "/"):
        c.check(other not in by, f"{other}: nothing written ({len(by.get(other, []))} steps)")
    for e in steps:
        c.check(e.f.get("status") in ("done", "partial"),
                f"step {e.f.get('cgroup')}: status {e.f.get('status')} errno {e.f.get('errno')}")
    idle = s.first("target_idle")
    read_end = s.mark("idle_read_end")
    if c.check(idle is not None and idle.f.get("cgroup") == "idle.slice" and read_end is not None,
               "idle.slice was the first (and only) target judged idle"):
        delay = idle.t - (read_end.t + a.grace)
        c.figure(f"{a.kernel} idle.slice: reclaim start after its own grace end", f"{delay:+.3f} s")
        c.check(delay >= -0.2, f"idle.slice: not idle before its grace ends, less 0.2 s ({delay:+.3f} s)")
        canary.judge(c, "idle.slice: idle within 1 s of its grace ending", delay, 1.0,
                     canary.Canary.of(timeline.all, host), (read_end.t + a.grace, idle.t))
    c.check(not any(e.f.get("cgroup") in ("busy.slice", "kept.slice") for e in s.events("target_idle")),
            "busy.slice and kept.slice were never judged idle")
    c.check(not s.events("idle_entered"), "the machine as a whole was never idle (the busy loop)")
    rows = []
    for cg in ("idle.slice", "busy.slice", "kept.slice"):
        before, after = s.cgroup_mib("after_fill", cg), s.cgroup_mib("after_wait", cg)
        if not c.check(before is not None and after is not None, f"{cg}: memory figures seen"):
            continue
        rows.append(f"{cg} {before:.0f} -> {after:.1f} MiB")
        c.check(before >= 95, f"{cg}: its reads were charged to it ({before:.0f} MiB)")
        if cg == "idle.slice":
            c.check(FLOOR_MIB * 0.9 <= after <= FLOOR_MIB * 1.05,
                    f"idle.slice: at its {FLOOR_MIB} MiB floor within -10 %/+5 % ({after:.1f} MiB)")
        else:
            c.check(after >= 0.95 * before, f"{cg}: cache kept ({after:.1f} of {before:.0f} MiB)")
    c.figure(f"{a.kernel} file cache per cgroup, after the reads -> after grace+14 s", "; ".join(rows))
    errors = [l.text for l in s.lines if l.kind == "event" and (" error " in l.text or " critical " in l.text)]
    c.check(not errors, f"no error lines while cgroups came and went ({errors[:2]})")
    walks = s.events("walk")
    vanished = sum(int(w.f.get("vanished", "0")) for w in walks)
    c.figure(f"{a.kernel} walks during the run / cgroups vanished mid-walk", f"{len(walks)} / {vanished}")
    c.check(s.mark("churn_done") is not None, "the churn of cgroups ran to its end")
    counted = s.mark("cgroups_counted")
    last_walk = [w for w in walks if counted is None or w.t < counted.t]
    if c.check(counted is not None and last_walk, "a walk after the tree settled, and find's count"):
        c.check(int(last_walk[-1].f.get("cgroups", -1)) == int(counted.f["count"]),
                f"the walk saw every cgroup ({last_walk[-1].f.get('cgroups')} walked, {counted.f['count']} found)")
    ex = s.exit()
    c.check(ex is not None and ex.f.get("code") == "0", f"clean exit on SIGTERM (code {ex and ex.f.get('code')})")
    replayed = s.mark("replayed")
    if c.check(replayed is not None, "the recording was replayed"):
        f = replayed.f
        c.check(f.get("code") == "0", f"the replay gave the recorded commands (exit {f.get('code')}: {f.get('error')})")
        chunks = len(by.get("idle.slice", []))
        c.check(int(f.get("reclaims", 0)) >= max(chunks, 1) and f.get("reclaims") == f.get("recorded"),
                f"its reclaim commands are the run's ({f.get('reclaims')} replayed, {f.get('recorded')} recorded, "
                f"{chunks} steps logged)")
        c.check(f.get("same") == "1", "two replays print the same")
        c.figure(f"{a.kernel} recording of the run", f"{f.get('bytes')} bytes, {f.get('commands')} commands")
    return 0 if c.report() else 1


if __name__ == "__main__":
    sys.exit(main())

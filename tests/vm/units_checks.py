"""Phase u of the never-idle VM test (guest/units.sh): quiet units (idle.units) on a real kernel.

Without rules, user.slice/build.scope (400 MiB read, its work ended) is a systemd scope whose own
CPU stays quiet, while user.slice/editor.service keeps the machine busy (1-5 % of the vCPU) and
re-reads its 32 MiB hot set every second. Trimming is off and the machine floor 32 MiB, so what
is written is the units' doing and the scope's own floor (reclaim.cgroup_floor, 16 MiB) binds.
The scans that judge units come every 30 s (kBusyScanEvery): the scope has been quiet for the
10 s grace at the second scan, so its cache is asserted down within UNITS_WITHIN_S.
Asserted:
  - the scenario held: the scope cached >= 380 MiB and the editor its hot set (95 %); the machine
    was never judged idle;
  - a unit_quiet event names user.slice/build.scope; every reclaim step went to it, as rule=unit,
    done or partial; none to the editor's service;
  - the scope's file cache is at most 16 MiB * 1.10 + 1 MiB within 45 s, and stays so;
  - the editor's service read at most 1 % of its hot set back from disk over the run, kept the
    hot set cached, and its memory PSI "some" total grew by at most 10 ms.
"""

import canary

UNIT = "user.slice/build.scope"
UNIT_FLOOR_MIB, HOT_MIB = 16, 32
UNIT_BOUND_MIB = UNIT_FLOOR_MIB * 1.10 + 1
UNITS_WITHIN_S = 45
PSI_LIMIT_MS = 10


def check_units(c, s, kernel, late):
    """late: the run's canary.Canary; the 45 s bound is judged net of the guest's lateness."""
    tag = f"{kernel} units"
    series = s.series("@@USAMPLE ")
    if not c.check(len(series) >= 10, f"{tag}: samples seen ({len(series)})"):
        return
    first, last = series[0][1], series[-1][1]
    c.check(first["build_kib"] >= 380 * 1024, f"{tag}: the build's scope held its cache when reclaimd started "
            f"({first['build_kib'] / 1024:.0f} MiB)")
    c.check(first["editor_kib"] >= HOT_MIB * 1024 * 0.95, f"{tag}: the editor's hot set was cached "
            f"when reclaimd started ({first['editor_kib'] / 1024:.1f} MiB)")
    idle = s.events("idle_entered")
    c.check(not idle, f"{tag}: the machine was never judged idle ({len(idle)} idle_entered)")
    quiet = [e for e in s.events("unit_quiet") if e.f.get("cgroup") == UNIT]
    c.check(bool(quiet), f"{tag}: unit_quiet names {UNIT} ({[e.text for e in s.events('unit_quiet')][:2]})")
    steps = s.events("reclaim_step")
    wrong = [e.text for e in steps if e.f.get("cgroup") != UNIT or e.f.get("rule") != "unit"]
    c.check(bool(steps) and not wrong, f"{tag}: every step went to {UNIT} as rule=unit ({len(steps)} steps; "
            f"others: {wrong[:2]})")
    bad = [e.text for e in steps if e.f.get("status") not in ("done", "partial")]
    c.check(not bad, f"{tag}: every step done or partial ({bad[:2]})")
    reached = next((t for t, f in series if f["build_kib"] / 1024 <= UNIT_BOUND_MIB), None)
    c.figure(f"{tag}: {UNIT} cache at +0/15/30/35/40/45 s",
             " / ".join(f"{next((f['build_kib'] / 1024 for t, f in series if t >= x), float('nan')):.0f}"
                        for x in (0, 15, 30, 35, 40, 45)) + " MiB")
    what = f"{tag}: the scope's cache at most {UNIT_BOUND_MIB:.1f} MiB within {UNITS_WITHIN_S} s"
    if c.check(reached is not None, f"{what}: reached"):
        start_ms = int(s.mark("start").f["t_ms"])
        canary.judge(c, what, reached, UNITS_WITHIN_S, late, (start_ms, start_ms + reached * 1000), guest_clock=True,
                     progress=True)
    c.check(last["build_kib"] / 1024 <= UNIT_BOUND_MIB, f"{tag}: and at the end ({last['build_kib'] / 1024:.1f} MiB)")
    if quiet:
        c.figure(f"{tag}: unit_quiet", quiet[0].text)
    read = last["editor_io"] - first["editor_io"]
    c.check(read <= HOT_MIB * 2**20 * 0.01, f"{tag}: the editor read back at most 1 % of its hot set "
            f"({read / 1024:.0f} KiB)")
    c.check(last["editor_kib"] >= HOT_MIB * 1024, f"{tag}: the editor's hot set stayed cached "
            f"({last['editor_kib'] / 1024:.1f} MiB)")
    stall = (last["psi_editor_us"] - first["psi_editor_us"]) / 1000
    c.check(stall <= PSI_LIMIT_MS, f"{tag}: the editor's memory stall grew by at most {PSI_LIMIT_MS} ms "
            f"({stall:.1f} ms)")
    ex = s.exit()
    c.check(ex is not None and ex.f.get("code") == "0",
            f"{tag}: clean exit on SIGTERM (code {ex and ex.f.get('code')})")

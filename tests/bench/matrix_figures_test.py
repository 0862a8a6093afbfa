#!/usr/bin/env python3
"""The matrix's figures and configuration parsing on made-up boots (no VM): each figure from a
timeline whose answer is known, and every bad --configs item refused with a message."""
import contextlib
import io
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "vm"))
sys.path.insert(0, HERE)
import hostmon  # noqa: E402
import matrix  # noqa: E402
import matrixfig  # noqa: E402
import scenario  # noqa: E402
import vm  # noqa: E402
from boots import Boot  # noqa: E402

SCALE = 1 / 12
MINUTE = 5.0


def made_up_boot(cache_mib, hot_read_mib, psi_ms, config="default"):
    """A boot whose work ends at t=100 and which ends at t=150; per-second samples from the
    functions of (t - 100); QEMU's RSS 1000 MiB throughout."""
    b = Boot("newest", config)
    b.release = "7.2"
    b.result = vm.Result(0, "ok", 0, 1, 10.0, 160.0, "/tmp")
    b.lines.append((90.0, None, "@@MARK hot_start t_ms=1"))
    for t in range(90, 151):
        s = t - 100
        b.lines.append((float(t), None, f"@@SAMPLE t_ms={t * 1000} file_kib={int(cache_mib(s) * 1024)} "
                        f"hot_read={int(hot_read_mib(s) * 2**20)} psi_us={int(psi_ms(s) * 2000)} "
                        f"psi_wl_us={int(psi_ms(s) * 1000)} refault={max(0, s)}"))
        if t == 100:
            b.lines.append((100.0, None, "@@MARK work_end t_ms=100000"))
    b.lines.append((150.5, None, "@@MARK end t_ms=150500"))
    b.lines.append((120.0, None, "ts info event=reclaim_step kind=trim freed_mib=4.0"))
    b.lines.append((121.0, None, "ts info event=trim_held for_s=1800"))
    b.lines.sort(key=lambda x: x[0])
    b.samples = [hostmon.Sample(float(t), 1000 * 1024, 0, 0, 0, 0, 0, 0.0) for t in range(100, 151)]
    return b


def late_boot():
    """500 MiB until 3 minutes (15 s) after the work, then 200; the hot reader reads 2 MiB a
    minute from then on; the workload stalls 1 ms a second after the work."""
    return made_up_boot(lambda s: 500 if s < 15 else 200, lambda s: 100 + max(0, s - 15) * 2 / MINUTE,
                        lambda s: max(0, s))


def check_figures(c):
    b = late_boot()
    r = matrixfig.figures(b, "base", SCALE, 100)
    c.check(r["bound_min"] == 3.0, f"at the bound 3 minutes after the work ({r.get('bound_min')})")
    c.check(r["cache_work_end_mib"] == 500 and r["cache_5m_mib"] == 200 and r["cache_end_mib"] == 200,
            f"cache at the work's end / 5 min / end 500 / 200 / 200 ({r.get('cache_work_end_mib')} / "
            f"{r.get('cache_5m_mib')} / {r.get('cache_end_mib')})")
    c.check(abs(r["hot_read_mib_per_min"] - 2 * 35 / 40) < 0.01 and abs(r["hot_read_pct_per_min"] - 1.75) < 0.01,
            f"hot set read from the 2nd minute: 14 MiB in 8 minutes ({r.get('hot_read_mib_per_min')} MiB/min, "
            f"{r.get('hot_read_pct_per_min')} %)")
    c.check(r["psi_some_after_work_us"] == 50000 and r["psi_machine_us"] == 100000,
            f"stall after the work 50 ms, the machine's 100 ms ({r.get('psi_some_after_work_us')}, "
            f"{r.get('psi_machine_us')})")
    c.check(r["footprint_mib_min"] == 10000, f"1000 MiB for 10 minutes: 10000 MiB x min ({r.get('footprint_mib_min')})")
    c.check((r["trims"], r["trimmed_mib"], r["trim_held"]) == (1, 4.0, 1), f"1 trim of 4 MiB, 1 hold ({r})")
    never = matrixfig.figures(made_up_boot(lambda s: 500, lambda s: 100, lambda s: 0, "none"), "base", SCALE, 100)
    c.check(never["bound_min"] is None and never["hot_read_mib_per_min"] == 0, f"never at the bound ({never})")
    cut = made_up_boot(lambda s: 500, lambda s: 100, lambda s: 0, "seed-gradual")
    cut.lines = [x for x in cut.lines if not x[2].startswith("@@MARK end")]
    short = matrixfig.figures(cut, "base", SCALE, 100)
    c.check("incomplete" in short["outcome"] and "bound_min" not in short, f"a boot cut short: no figures ({short})")
    md = matrixfig.table([r, never, short, {"cell": "base", "kernel": "6.1", "config": "damon", "outcome": "n/a: x"}],
                         ["base"], ["none", "seed-gradual", "default", "damon"], ["newest", "6.1"], "head")
    c.check("| 3.0 |" in md and "| never |" in md and "n/a: x" in md and "incomplete" in md,
            f"the table shows each row\n{md}")
    with tempfile.TemporaryDirectory() as d:
        matrixfig.write_csv(d, [r, never, short])
        with open(os.path.join(d, "cells.csv")) as fh:
            c.check(len(fh.read().splitlines()) == 4, "cells.csv: a header and three rows")
        matrixfig.write_series(b, os.path.join(d, "series.csv"), SCALE)
        with open(os.path.join(d, "series.csv")) as fh:
            lines = fh.read().splitlines()
        c.check(len(lines) == 1 + 51 + 61 and "0.000,host_rss_mib,1000.0" in lines
                and "-2.000,guest_file_mib,500.0" in lines,
                f"series.csv: every host and guest sample, minutes from the work's end ({lines[:3]})")
        # A guest line with the kernel's lists: they join the series, pages as MiB.
        b.lines.append((100.0, None, "@@SAMPLE t_ms=100000 file_kib=512000 hot_read=0 psi_us=0 psi_wl_us=0 "
                        "refault=0 nr_active_file=25600 nr_inactive_file=102400 workingset_activate_file=256 "
                        "workingset_restore_file=0"))
        matrixfig.write_series(b, os.path.join(d, "series.csv"), SCALE)
        with open(os.path.join(d, "series.csv")) as fh:
            lines = fh.read().splitlines()
        c.check({"0.000,nr_active_file,100.0", "0.000,nr_inactive_file,400.0", "0.000,workingset_activate_file,1.0",
                 "0.000,workingset_restore_file,0.0"} <= set(lines) and len(lines) == 1 + 51 + 62 + 4,
                f"series.csv: the kernel's file lists and workingset counters where the guest gave them, MiB "
                f"({[x for x in lines if 'file,' in x and 'guest' not in x]})")


def check_summary(c):
    # Two phases of one cell: one boot at the bound after 3 minutes with 1.75 % read back and
    # 50 ms of stall; one at the bound after 1 minute, nothing read back, no stall.
    late = matrixfig.figures(late_boot(), "base", SCALE, 100)
    soon = matrixfig.figures(made_up_boot(lambda s: 500 if s < 5 else 200, lambda s: 100, lambda s: 0), "base",
                             SCALE, 100)
    never = matrixfig.figures(made_up_boot(lambda s: 500, lambda s: 100, lambda s: 0), "base", SCALE, 100)
    rows = [dict(late, phase=0.0, boot=1), dict(soon, phase=0.5, boot=1), dict(never, phase=0.5, boot=2)]
    md = matrixfig.summary(rows, ["base"], ["default"], ["newest"])
    line = next((x for x in md.splitlines() if x.startswith("| base |")), "")
    want = "| base | 7.2 | default | 3 | 2 | 2 | 2 | 1 | 3.0 (1.0-never) | 0.00 (0.00-1.75) | 0.0 (0.0-50.0) |"
    c.check(line == want,
            f"summary: 3 boots, 2 in time, 2 under the read-back target, 2 without stall, 1 all three; "
            f"median (range) of each figure\n{md}")
    tot = matrixfig.totals(rows + [dict(soon, cell="once", phase=0.0, boot=1)], ["default"], ["newest"])
    line = next((x for x in tot.splitlines() if x.startswith("| 7.2 |")), "")
    c.check(line == "| 7.2 | default | 4 | 3 | 3 | 3 | 2 |",
            f"totals: 4 boots over two cells, 3 in time, 3 under the read-back target, 3 without stall, 2 all three"
            f"\n{tot}")
    table = matrixfig.table(rows, ["base"], ["default"], ["newest"], "head")
    c.check(all(f"| default @{p} #{n} |" in table for p, n in (("0", 1), ("0.5", 1), ("0.5", 2))),
            f"the table names each boot's phase and number\n{table}")
    for bad in ("1", "0 0", "x", "-0.1", ""):
        err = io.StringIO()
        try:
            with contextlib.redirect_stderr(err):
                matrix.parse_args(["--configs", "none", "--phases", bad])
            c.check(False, f"--phases {bad!r} refused")
        except SystemExit as e:
            said = err.getvalue().strip().splitlines()
            c.check(e.code == 2 and "--phases: " in err.getvalue(), f"--phases {bad!r} refused: {said[-1:]}")
    for flag, want in (("on", {"MGLRU": "y"}), ("off", {"MGLRU": "n"})):
        got = matrix.lru_env(matrix.parse_args(["--configs", "none", "--mglru", flag]))
        c.check(got == want, f"--mglru {flag}: the guest is told {want} ({got})")
    c.check(matrix.lru_env(matrix.parse_args(["--configs", "none"])) == {}, "without --mglru the LRU is left alone")
    got = matrix.parse_args(["--configs", "none", "--phases", "0 0.2 0.4"]).phase_list
    c.check(got == [0, 0.2, 0.4], f"--phases '0 0.2 0.4' parsed ({got})")


def check_configs(c):
    exe = sys.executable
    got = matrix.parse_configs(f"none default damon new=default@{exe} seed-gradual damos", exe)
    c.check([(x.name, x.kind, bool(x.binary)) for x in got] == [
        ("none", "none", False), ("default", "default", True), ("damon", "damon", False),
        ("new", "default", True), ("seed-gradual", "seed-gradual", True), ("damos", "damos", False)],
        f"configurations parsed ({got})")
    for bad, why in ((f"x=foo@{exe}", "unknown kind"), ("default", "no executable reclaimd"),
                     (f"d=damon@{exe}", "runs no reclaimd"), (f"d=damos@{exe}", "runs no reclaimd"),
                     ("none none", "given twice"), ("=default", "a name of"),
                     ("new=default@/nonexistent/reclaimd", "no executable reclaimd")):
        try:
            matrix.parse_configs(bad, None)
            c.check(False, f"{bad!r} refused")
        except ValueError as e:
            c.check(why in str(e), f"{bad!r} refused: {e}")


def main():
    c = scenario.Checks("matrix figures and configurations (no VM)")
    check_figures(c)
    check_summary(c)
    check_configs(c)
    return 0 if c.report() else 1


if __name__ == "__main__":
    sys.exit(main())

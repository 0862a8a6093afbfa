"""Figures of one never-idle matrix boot (guest/matrix.sh) and the run's cells.csv and table.md.

All times are host arrival times (boots.Boot), the clock the host's RSS samples share. A
"minute" is a full-scale minute on the run's clock (60 s x scale).
"""
import csv
import os

import scenario

FLOOR_MIB = 128  # the default policy's machine floor
# The targets a boot is judged by: at the bound within 5 minutes of the work's end, the hot set
# read back at under 1 % of its size a minute after two, the workload's stall after the work at
# most 10 ms (nothing but reclaim stalls it; tests/vm/matrix_test.py's bound).
TARGET_MIN, TARGET_READ_PCT, TARGET_STALL_MS = 5.0, 1.0, 10.0

COLUMNS = ("cell", "kernel", "release", "config", "phase", "boot", "outcome", "cache_work_end_mib", "bound_mib",
           "bound_min", "cache_5m_mib", "cache_end_mib", "hot_read_mib_per_min", "hot_read_pct_per_min",
           "psi_some_us", "psi_some_after_work_us", "psi_machine_us", "refaults_after_work", "footprint_work_end_mib",
           "footprint_end_mib", "footprint_mib_min", "trims", "trimmed_mib", "trim_held",
           "damon_reclaimed_mib", "damon_enabled")


def guest_samples(boot):
    """[(host t, {field: int})] of the @@SAMPLE lines."""
    out = []
    for t, _, text in boot.lines:
        if text.startswith("@@SAMPLE "):
            f = scenario.fields(text)
            if all(v.isdigit() for v in f.values()):
                out.append((t, {k: int(v) for k, v in f.items()}))
    return out


def _after(series, t):
    return next(((ts, f) for ts, f in series if ts >= t), (None, None))


def _cache(boot, series, t0, minute, hot_mib):
    f = {}
    bound = (FLOOR_MIB + hot_mib) * 1.10
    f["bound_mib"] = round(bound, 1)
    _, w = _after(series, t0)
    if w:
        f["cache_work_end_mib"] = round(w["file_kib"] / 1024, 1)
    _, m5 = _after(series, t0 + 5 * minute)
    if m5:
        f["cache_5m_mib"] = round(m5["file_kib"] / 1024, 1)
    f["cache_end_mib"] = round(series[-1][1]["file_kib"] / 1024, 1)
    reached = next((ts for ts, s in series if ts >= t0 and s["file_kib"] / 1024 <= bound), None)
    f["bound_min"] = None if reached is None else round((reached - t0) / minute, 2)
    return f


def _hot(series, t0, minute, hot_mib):
    """The hot set read back from disk after the first two minutes past the work's end."""
    ta, a = _after(series, t0 + 2 * minute)
    tb, b = series[-1]
    if a is None or tb <= ta:
        return {}
    mib = (b["hot_read"] - a["hot_read"]) / 2**20
    per_min = mib / ((tb - ta) / minute)
    return {"hot_read_mib_per_min": round(per_min, 2), "hot_read_pct_per_min": round(100 * per_min / hot_mib, 2)}


def _footprint(boot, t0, t1, minute):
    s = [x for x in boot.samples if t0 <= x.t <= t1 and x.rss_kib > 0]
    if len(s) < 2:
        return {}
    area = sum((b.t - a.t) * (a.rss_kib + b.rss_kib) / 2 / 1024 for a, b in zip(s, s[1:]))
    return {"footprint_work_end_mib": round(s[0].rss_kib / 1024), "footprint_end_mib": round(s[-1].rss_kib / 1024),
            "footprint_mib_min": round(area / minute)}


def _controller(boot):
    trims = [f for _, f in boot.events("reclaim_step") if f.get("kind") == "trim"]
    f = {"trims": len(trims), "trimmed_mib": round(sum(float(x.get("freed_mib", 0)) for x in trims), 1),
         "trim_held": len(boot.events("trim_held"))}
    for t, _, text in boot.lines:
        if text.startswith("@@DAMON "):
            d = scenario.fields(text)
            if "end" in d and d.get("bytes_reclaimed_regions", "").isdigit():
                f["damon_reclaimed_mib"] = round(int(d["bytes_reclaimed_regions"]) / 2**20, 1)
            if "enabled" in d:
                f["damon_enabled"] = d["enabled"]
    return f


def figures(boot, cell, scale, hot_mib):
    """One cells.csv row for a boot (its "outcome" says why figures are missing)."""
    row = {"cell": cell, "kernel": boot.kernel, "release": boot.release, "config": boot.config,
           "outcome": boot.result.outcome if boot.result else "not run"}
    series = guest_samples(boot)
    t0, _ = boot.mark("work_end")
    t1, _ = boot.mark("end")
    if not series or t0 is None or t1 is None:
        row["outcome"] = f"{row['outcome']}, incomplete"
        return row
    minute = 60 * scale
    row.update(_cache(boot, series, t0, minute, hot_mib))
    row.update(_hot(series, t0, minute, hot_mib))
    _, w = _after(series, t0)
    first, last = series[0][1], series[-1][1]
    row["psi_machine_us"] = last["psi_us"] - first["psi_us"]
    row["psi_some_us"] = last["psi_wl_us"] - first["psi_wl_us"]
    if w:
        row["psi_some_after_work_us"] = last["psi_wl_us"] - w["psi_wl_us"]
        row["refaults_after_work"] = last["refault"] - w["refault"]
    row.update(_footprint(boot, t0, t1, minute))
    row.update(_controller(boot))
    return row


PAGE_KIB = 4  # the guests are x86-64
LRU_SERIES = ("nr_active_file", "nr_inactive_file", "workingset_activate_file", "workingset_restore_file")


def write_series(boot, path, scale):
    """The boot's footprint over time, for plots: full-scale minutes from the work's end, QEMU's
    RSS (every host sample) and the guest's file cache (at its own samples), MiB; beside them
    the guest's active and inactive file lists and its cumulative activated and restored
    refaults, MiB, for reading where the kernel kept the hot set (matrixplot.py draws only the
    first two)."""
    t0, _ = boot.mark("work_end")
    if t0 is None:
        return
    minute = 60 * scale
    pts = [(s.t, "host_rss_mib", s.rss_kib / 1024) for s in boot.samples if s.rss_kib > 0]
    for t, f in guest_samples(boot):
        pts.append((t, "guest_file_mib", f["file_kib"] / 1024))
        # The kernel's lists and workingset counters, where the guest's line has them (pages).
        pts += [(t, name, f[name] * PAGE_KIB / 1024) for name in LRU_SERIES if name in f]
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["t_min", "series", "mib"])
        for t, name, mib in sorted(pts):
            w.writerow([f"{(t - t0) / minute:.3f}", name, f"{mib:.1f}"])


def write_csv(out, rows):
    with open(os.path.join(out, "cells.csv"), "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=COLUMNS, extrasaction="ignore")
        w.writeheader()
        for r in rows:
            w.writerow({k: ("" if r.get(k) is None else r.get(k)) for k in COLUMNS})


def _v(r, key, spec="{:g}"):
    v = r.get(key)
    return "-" if v is None or v == "" else spec.format(v)


def _boots(rows, cell, kernel, config):
    return [r for r in rows if (r["cell"], r["kernel"], r["config"]) == (cell, kernel, config)]


def table(rows, cells, configs, kernels, head):
    """Markdown: one row per boot, by cell x kernel x config in the run's order; where a key has
    more than one boot (phases, repeats) the config says which: "default @0.4 #2"."""
    out = [head, "",
           "| cell | kernel | config | cache at work end, MiB | bound, MiB | at bound after, min "
           "| cache at 5 min / end, MiB "
           "| hot set read back after 2 min, MiB/min (% of it) | workload's PSI some, ms (after the work) "
           "| footprint integral, MiB x min | trims / MiB / holds | DAMON reclaimed, MiB |",
           "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for cell in cells:
        for k in kernels:
            for base in configs:
                boots = _boots(rows, cell, k, base)
                for r in boots:
                    c = base if len(boots) == 1 else f"{base} @{r.get('phase', 0):g} #{r.get('boot', 1)}"
                    out.append(_row(r, cell, k, c))
    return "\n".join(out) + "\n"


def _row(r, cell, k, c):
    if "cache_end_mib" not in r:
        return f"| {cell} | {r.get('release') or k} | {c} | {r['outcome']} |" + " |" * 8
    at = "never" if r.get("bound_min") is None else f"{r['bound_min']:.1f}"
    hot = f"{_v(r, 'hot_read_mib_per_min', '{:.2f}')} ({_v(r, 'hot_read_pct_per_min', '{:.2f}')} %)"
    after = r.get("psi_some_after_work_us")
    psi = f"{r['psi_some_us'] / 1000:.1f} ({'-' if after is None else f'{after / 1000:.1f}'})"
    ctl = f"{r['trims']} / {r['trimmed_mib']:.0f} / {r['trim_held']}" if r.get("trims") else "-"
    return (f"| {cell} | {r.get('release') or k} | {c} | {_v(r, 'cache_work_end_mib', '{:.0f}')} | "
            f"{r['bound_mib']:.0f} | {at} | {_v(r, 'cache_5m_mib', '{:.0f}')} / {r['cache_end_mib']:.0f} | "
            f"{hot} | {psi} | {_v(r, 'footprint_mib_min', '{:.0f}')} | {ctl} | "
            f"{_v(r, 'damon_reclaimed_mib', '{:.0f}')} |")


def _spread(values, spec):
    """'median (min-max)' of numbers, None as "never" (largest); of an even count, the lower of
    the two middle values (a figure some boot had, not a mean of two)."""
    if not values:
        return "-"
    key = sorted(values, key=lambda v: (v is None, v or 0))
    f = lambda v: "never" if v is None else spec.format(v)  # noqa: E731
    mid = key[(len(key) - 1) // 2]
    return f(mid) if len(key) == 1 else f"{f(mid)} ({f(key[0])}-{f(key[-1])})"


def judged(r):
    """(at the bound in time, hot set read back under the target, stall within it) of a boot
    with figures; None where a figure is missing."""
    t = r.get("bound_min")
    read, stall = r.get("hot_read_pct_per_min"), r.get("psi_some_after_work_us")
    return (t is not None and t <= TARGET_MIN, None if read is None else read < TARGET_READ_PCT,
            None if stall is None else stall / 1000 <= TARGET_STALL_MS)


def _met(boots):
    """Cells of a table row: how many of `boots` met each target, and all three."""
    marks = [judged(r) for r in boots]
    met = [sum(1 for m in marks if m[i]) for i in range(3)]
    return f"{met[0]} | {met[1]} | {met[2]} | {sum(1 for m in marks if all(m))}"


def totals(rows, configs, kernels):
    """Markdown: per kernel x config, over all its cells and boots, how many boots met each target:
    the line a whole-matrix run is read by."""
    out = ["| kernel | config | boots | at bound in time | read back under target | stall within target "
           "| all three |", "|---|---|---|---|---|---|---|"]
    for k in kernels:
        for c in configs:
            boots = [r for r in rows if r["kernel"] == k and r["config"] == c and "cache_end_mib" in r]
            if not boots:
                continue
            release = boots[0].get("release") or k
            out.append(f"| {release} | {c} | {len(boots)} | {_met(boots)} |")
    return "\n".join(out) + "\n"


def summary(rows, cells, configs, kernels):
    """Markdown: per cell x kernel x config over its boots (phases, repeats), how many met each
    target and the median (range) of each figure: a cell whose outcome turns on where the work's
    end falls between the hot set's reads shows it here, not in one boot."""
    out = [f"Over the boots of each cell (targets: at the bound within {TARGET_MIN:g} min, hot set read back under "
           f"{TARGET_READ_PCT:g} % a minute after two, workload's stall after the work at most {TARGET_STALL_MS:g} ms; "
           "median (range)):", "",
           "| cell | kernel | config | boots | at bound in time | read back under target | stall within target "
           "| all three | at bound after, min | read back, % a minute | stall after the work, ms |",
           "|---|---|---|---|---|---|---|---|---|---|---|"]
    for cell in cells:
        for k in kernels:
            for c in configs:
                boots = [r for r in _boots(rows, cell, k, c) if "cache_end_mib" in r]
                if not boots:
                    continue
                release = boots[0].get("release") or k
                read = [r["hot_read_pct_per_min"] for r in boots if "hot_read_pct_per_min" in r]
                stall = [r["psi_some_after_work_us"] / 1000 for r in boots if "psi_some_after_work_us" in r]
                out.append(f"| {cell} | {release} | {c} | {len(boots)} | {_met(boots)} | "
                           f"{_spread([r.get('bound_min') for r in boots], '{:.1f}')} | "
                           f"{_spread(read, '{:.2f}')} | {_spread(stall, '{:.1f}')} |")
    return "\n".join(out) + "\n"

"""The never-idle benchmark phases (guest/bench.sh's `noisy` and `rebuild`): figures, table, plot.

noisy    the machine never goes idle: a background burst of NOISE_MS every second (1-5 % of the
         vCPU, an editor's language server) and a 32 MiB hot set re-read every 12 s (full
         scale), for LONG (15 min full scale), after the build left its cold cache. Checkpoints
         at 2, 5 and 10 full-scale minutes and at the end.
rebuild  a busy workload whose working set (REBUILD_DIRS source directories, their objects, the
         linked image: ~300 MiB for 16) is above the 128 MiB floor: a full build (round 0), then
         timed rounds back to back, each reading every source, recompressing REBUILD_GZIP
         directories and re-linking. Its round time against `none` is the cost of trimming, as
         far as the host's noise lets round times show it; the same cost measured from inside
         (reclaimd's CPU, memory stall, disk read time over the rounds) does not depend on it.

Time scaling: trim.interval is scaled with the grace (6 s x scale, at least the key's 500 ms) in
any run whose plan has one of these phases, so a scaled run is the same law on a shorter clock;
the hot set's period and the checkpoints are scaled too, the noise's 1 s period and the
workloads are not.
"""
import csv
import os
import statistics
import subprocess
import sys

import plot as plotting

FULL_GRACE, FULL_TRIM, FULL_HOT_PERIOD = 120.0, 6.0, 12.0  # seconds at full scale
HOT_MIB = 32
MINUTES = (2, 5, 10)  # the checkpoints before the end, in full-scale minutes
PHASES = ("noisy", "rebuild")


def scale_of(grace):
    return grace / FULL_GRACE


def scale_text(grace):
    s = scale_of(grace)
    return f"1/{round(1 / s)}" if s < 1 and abs(1 / s - round(1 / s)) < 1e-6 else f"{s:g}"


def trim_interval(grace):
    """trim.interval for a run at this grace: Senpai's 6 s on the run's clock."""
    return max(0.5, FULL_TRIM * scale_of(grace))


def guest_env(args, grace):
    s = scale_of(grace)
    return {"MINUTE_MS": int(60000 * s), "HOT_PERIOD_MS": int(max(0.2, FULL_HOT_PERIOD * s) * 1000),
            "NOISE_MS": args.noise_ms, "REBUILD_DIRS": args.rebuild_dirs,
            "REBUILD_GZIP": args.rebuild_gzip, "REBUILD_ROUNDS": args.rebuild_rounds}


def plan_seconds(phase, long_s, args):
    if phase == "noisy":
        return long_s + 5
    # round 0 compresses every directory (~2.5 s each under TCG), a round REBUILD_GZIP of them
    return 10 + args.rebuild_dirs * 3.0 + args.rebuild_rounds * (8 + 3.0 * args.rebuild_gzip)


def add_arguments(p):
    p.add_argument("--noise-ms", type=int, default=20, help="noisy: ms on the CPU every second (20 = 2 %%)")
    p.add_argument("--rebuild-dirs", type=int, default=16, help="rebuild: source directories (12 MiB each)")
    p.add_argument("--rebuild-gzip", type=int, default=2, help="rebuild: directories recompressed a round")
    p.add_argument("--rebuild-rounds", type=int, default=5, help="rebuild: timed rounds")


# ---- figures ------------------------------------------------------------------------------

def _checkpoints(boot, prefix, phase):
    """{label: (host t, @@MEM fields, @@CPU fields, read sectors)} for a phase's checkpoints."""
    cpu = {n: f for _, n, f in boot.parsed("@@CPU", phase)}
    disk = {n: int(f["read_sectors"]) for _, n, f in boot.parsed("@@DISK", phase)}
    out = {}
    for t, name, _ in boot.parsed("@@MARK", phase):
        if name.startswith(prefix):
            _, m = boot.mem(name, phase)
            out[name] = (t, m, cpu.get(name, {}), disk.get(name))
    return out


def _busy_pct(a, b):
    busy = int(b["busy"]) - int(a["busy"])
    total = busy + int(b["idle"]) - int(a["idle"])
    return 100.0 * busy / total if total else None


def _steps(boot, phase, t0=None, t1=None):
    ev = [(t, e) for t, e in boot.events(phase=phase)
          if (t0 is None or t >= t0) and (t1 is None or t <= t1)]
    trims = [e for _, e in ev if e.get("event") == "reclaim_step" and e.get("kind") == "trim"]
    idle = [e for _, e in ev if e.get("event") in ("reclaim_step", "dropcache") and e.get("kind") != "trim"]
    return {"trims": len(trims), "trimmed_mib": sum(float(e.get("freed_mib", 0)) for e in trims),
            "idle_steps": len(idle), "trim_held": len([1 for _, e in ev if e.get("event") == "trim_held"]),
            "idle_entered": len([1 for _, e in ev if e.get("event") == "idle_entered"])}


def noisy_figures(boot, grace, floor_mib):
    f = {"kernel": boot.kernel, "release": boot.release, "config": boot.config, "scenario": "noisy"}
    cp = _checkpoints(boot, "noisy_", "noisy")
    if "noisy_start" not in cp or "noisy_end" not in cp or not boot.samples:
        f["error"] = "phase incomplete"
        return f
    minute = 60 * scale_of(grace)
    t0, t1 = cp["noisy_start"][0], cp["noisy_end"][0]
    f["phase_s"] = t1 - t0
    for label, key in [("noisy_start", "0"), *((f"noisy_{m}m", str(m)) for m in MINUTES), ("noisy_end", "end")]:
        if label in cp:
            t, m, _, _ = cp[label]
            f[f"footprint_{key}_mib"] = boot.sample_at(t).rss_kib / 1024
            if m:
                f[f"cache_{key}_mib"] = m["file_kib"] / 1024
                f[f"reclaimable_{key}_mib"] = m["reclaimable_kib"] / 1024
    f["busy_pct"] = _busy_pct(cp["noisy_start"][2], cp["noisy_end"][2])
    if "noisy_2m" in cp and None not in (cp["noisy_2m"][3], cp["noisy_end"][3]):
        mib = (cp["noisy_end"][3] - cp["noisy_2m"][3]) * 512 / 2**20
        f["hot_read_after_2m_mib"] = mib
        f["hot_read_pct_per_min"] = 100 * mib / HOT_MIB / ((t1 - cp["noisy_2m"][0]) / minute)
    f.update(_steps(boot, "noisy"))
    f.update({f"noisy_{k}": v for k, v in _cost(boot, "noisy", "noisy_start", "noisy_end", cp).items()})
    bound = (floor_mib + HOT_MIB) * 1.10
    off = boot.cache_offset_kib()
    reached = next((s.t for s in boot.samples if t0 <= s.t <= t1 and s.guest_cache_kib >= 0
                    and (s.guest_cache_kib - off) / 1024 <= bound), None)
    f["bound_mib"] = bound
    # in the guest's clock, which is the host's but under --icount (minutes are the guest's)
    g0, gr = boot.guest_s_at(t0), boot.guest_s_at(reached) if reached is not None else None
    f["bound_reached_min"] = (gr - g0) / minute if None not in (g0, gr) else None
    return f


def rebuild_figures(boot):
    f = {"kernel": boot.kernel, "release": boot.release, "config": boot.config, "scenario": "rebuild"}
    cp = _checkpoints(boot, "round_", "rebuild")
    rounds, cpu, busy, disk, i = [], [], [], [], 1
    while f"round_{i}_start" in cp and f"round_{i}_end" in cp:
        a, b = cp[f"round_{i}_start"], cp[f"round_{i}_end"]
        rounds.append(b[0] - a[0])
        qa, qb = boot.qemu_cpu_at(a[0]), boot.qemu_cpu_at(b[0])
        cpu.append(qb - qa if qa is not None and qb is not None else None)
        if "busy" in a[2] and "busy" in b[2]:  # USER_HZ ticks: the work, the kernel and reclaimd
            busy.append((int(b[2]["busy"]) - int(a[2]["busy"])) / 100)
        disk.append((b[3] - a[3]) * 512 / 2**20 if a[3] is not None and b[3] is not None else 0.0)
        i += 1
    if not rounds or "round_0_end" not in cp:
        f["error"] = "phase incomplete"
        return f
    f["round0_s"] = cp["round_0_end"][0] - cp["round_0_start"][0]
    f["rounds_s"] = " ".join(f"{x:.2f}" for x in rounds)
    f["round_best_s"], f["round_median_s"] = min(rounds), statistics.median(rounds)
    cpu = [x for x in cpu if x is not None]  # the last round may end after the last sample
    if cpu:  # the host's CPU seconds for each round: host contention left out
        f["rounds_cpu_s"] = " ".join(f"{x:.2f}" for x in cpu)
        f["round_cpu_best_s"], f["round_cpu_median_s"] = min(cpu), statistics.median(cpu)
    if busy and len(busy) == len(rounds):  # the guest's CPU in each round (see derive)
        f["rounds_busy"] = " ".join(f"{x:.2f}" for x in busy)
        f["rounds_busy_s"] = sum(busy)
    f["round_disk_mib"] = " ".join(f"{x:.1f}" for x in disk)
    f["rounds_disk_mib"] = sum(disk)
    s = next((fl for _, n, fl in boot.parsed("@@MARK", "rebuild") if n == "rebuild_set"), None)
    if s:  # obj_kib: the objects and the linked image (du of /data/out/rb)
        f["working_set_mib"] = (int(s["src_kib"]) + int(s["obj_kib"])) / 1024
    m = cp[f"round_{len(rounds)}_end"][1]
    if m:
        f["cache_end_mib"] = m["file_kib"] / 1024
    f.update(_steps(boot, "rebuild", cp["round_1_start"][0], cp[f"round_{len(rounds)}_end"][0]))
    f["rounds_host_faults"] = boot.qemu_minflt_between(cp["round_1_start"][0], cp[f"round_{len(rounds)}_end"][0])
    f.update(_cost(boot, "rebuild", "round_1_start", f"round_{len(rounds)}_end", cp))
    return f


def _cost(boot, phase, a, b, cp):
    """What the work lost to reclaimd between checkpoints a and b, summed: its CPU (one vCPU),
    the machine's memory stall and the disk's read time, as a share of the span. Each is
    measured, none is a round time, so the host's noise does not enter. It covers what reclaimd
    does and the refaults it causes, not the kernel's work in other threads after a trim (free
    page reporting, kcompactd) nor the host's refilling of pages the guest gave back."""
    cost = {name: fl for _, name, fl in boot.parsed("@@COST", phase)}
    disk = {name: fl for _, name, fl in boot.parsed("@@DISK", phase)}
    num = lambda d, k, key: int(d[k][key]) if k in d and d[k].get(key, "").isdigit() else None  # noqa: E731
    got = {}
    for key, src, field, unit in (("cost_cpu_s", cost, "reclaimd_ticks", 100),
                                  ("cost_stall_s", cost, "stall_some_us", 1e6),
                                  ("cost_read_s", disk, "read_ms", 1000)):
        x, y = num(src, a, field), num(src, b, field)
        if x is not None and y is not None:
            got[key] = (y - x) / unit
    span = cp[b][0] - cp[a][0]
    if len(got) == 3 and span > 0:
        got["cost_pct"] = 100 * sum(got.values()) / span
    return got


def boot_rows(boot, plan, grace, floor_mib):
    rows = []
    if "noisy" in plan:
        rows.append(noisy_figures(boot, grace, floor_mib))
    if "rebuild" in plan:
        rows.append(rebuild_figures(boot))
    return rows


def derive(rows):
    """The rebuild's round times against no controller's, per kernel."""
    base = {r["kernel"]: r for r in rows if r.get("scenario") == "rebuild" and r["config"] == "none"
            and "error" not in r}
    for r in rows:
        b = base.get(r["kernel"])
        if r.get("scenario") == "rebuild" and b and "error" not in r:
            r["ratio_best"] = r["round_best_s"] / b["round_best_s"]
            r["ratio_median"] = r["round_median_s"] / b["round_median_s"]
            if r.get("round_cpu_median_s") and b.get("round_cpu_median_s"):
                r["cpu_ratio_best"] = r["round_cpu_best_s"] / b["round_cpu_best_s"]
                r["cpu_ratio_median"] = r["round_cpu_median_s"] / b["round_cpu_median_s"]
            if r.get("rounds_busy") and b.get("rounds_busy"):
                # Round i recompresses the same directories in every boot: compare round by round
                # (the rounds both have). Under --icount the guest's clock counts instructions,
                # so this is the work's CPU as executed, whatever the host's speed.
                own, base_busy = (list(map(float, x["rounds_busy"].split())) for x in (r, b))
                n = min(len(own), len(base_busy))
                r["busy_ratio"] = sum(own[:n]) / sum(base_busy[:n]) if sum(base_busy[:n]) else None
                r["busy_round_ratios"] = " ".join(f"{x / y:.3f}" for x, y in zip(own, base_busy) if y)


# ---- table --------------------------------------------------------------------------------

def _fmt(v, spec):
    return "-" if v is None else spec.format(v)


def _table_rows(scen, grace):
    minute = 60 * scale_of(grace)
    cells = lambda key: (lambda r: r.get(key))  # noqa: E731
    pair = lambda a, b: (lambda r: None if r.get(a) is None  # noqa: E731
                         else f"{r[a]:.0f} / {_fmt(r.get(b), '{:.0f}')}")
    if scen == "noisy":
        return [
            ("Never idle: footprint / guest file cache at the start, MiB",
             pair("footprint_0_mib", "cache_0_mib"), "{}"),
            *((f"Never idle: footprint / guest file cache at {m} min ({m * minute:g} s), MiB",
               pair(f"footprint_{m}_mib", f"cache_{m}_mib"), "{}") for m in MINUTES[1:]),
            ("Never idle: footprint / guest file cache at the end (15 min), MiB",
             pair("footprint_end_mib", "cache_end_mib"), "{}"),
            ("Never idle: reclaimable at the end, MiB", cells("reclaimable_end_mib"), "{:.0f}"),
            ("Never idle: cache at most floor + hot set + 10 % after, min", cells("bound_reached_min"), "{:.1f}"),
            ("Never idle: guest CPU busy over the phase, % (idle <= 0.5)", cells("busy_pct"), "{:.2f}"),
            ("Never idle: idle periods entered / idle reclaim steps", pair("idle_entered", "idle_steps"), "{}"),
            ("Never idle: trim probes / MiB trimmed", pair("trims", "trimmed_mib"), "{}"),
            ("Never idle: reclaimd CPU / memory stall (PSI some) over the phase, s",
             lambda r: None if r.get("noisy_cost_pct") is None else
             f"{r['noisy_cost_cpu_s']:.2f} / {r['noisy_cost_stall_s']:.3f}", "{}"),
            ("Never idle: hot set read from disk after 2 min, MiB (% of it a minute; target < 1)",
             lambda r: None if r.get("hot_read_after_2m_mib") is None else
             f"{r['hot_read_after_2m_mib']:.1f} ({r['hot_read_pct_per_min']:.2f})", "{}"),
        ]
    return [
        ("Rebuild: working set (sources + objects + image), MiB", cells("working_set_mib"), "{:.0f}"),
        ("Rebuild: round 0 (full build), s", cells("round0_s"), "{:.1f}"),
        ("Rebuild: round, best / median, s", lambda r: None if r.get("round_best_s") is None else
         f"{r['round_best_s']:.2f} / {r['round_median_s']:.2f}", "{}"),
        ("Rebuild: ratio to no controller, best / median (target <= 1.02)", lambda r: None if r.get(
            "ratio_best") is None else f"{r['ratio_best']:.3f} / {r['ratio_median']:.3f}", "{}"),
        ("Rebuild: host CPU (QEMU) per round, best / median, s", lambda r: None if r.get(
            "round_cpu_best_s") is None else f"{r['round_cpu_best_s']:.2f} / {r['round_cpu_median_s']:.2f}", "{}"),
        ("Rebuild: its ratio to no controller, best / median (waiting for a host CPU left out)",
         lambda r: None if r.get("cpu_ratio_best") is None else
         f"{r['cpu_ratio_best']:.3f} / {r['cpu_ratio_median']:.3f}", "{}"),
        ("Rebuild: guest CPU over the timed rounds (the work, the kernel, reclaimd), s",
         cells("rounds_busy_s"), "{:.2f}"),
        ("Rebuild: its ratio to no controller, round by round (target <= 1.02; exact under --icount)",
         cells("busy_ratio"), "{:.4f}"),
        ("Rebuild: MiB read from disk over the timed rounds", cells("rounds_disk_mib"), "{:.1f}"),
        ("Rebuild: reclaimd CPU / memory stall / disk read time over the timed rounds, s",
         lambda r: None if r.get("cost_pct") is None else
         f"{r['cost_cpu_s']:.2f} / {r['cost_stall_s']:.2f} / {r['cost_read_s']:.2f}", "{}"),
        ("Rebuild: their sum, % of the rounds' time (reclaimd's own share; target <= 2)",
         cells("cost_pct"), "{:.2f}"),
        ("Rebuild: host page faults of QEMU over the timed rounds (guest RAM refilled)",
         cells("rounds_host_faults"), "{}"),
        ("Rebuild: trim probes / MiB trimmed / holds in the timed rounds", lambda r: None if r.get(
            "trims") is None else f"{r['trims']} / {r['trimmed_mib']:.0f} / {r['trim_held']}", "{}"),
        ("Rebuild: guest file cache after the last round, MiB", cells("cache_end_mib"), "{:.0f}"),
    ]


def render(rows, configs, grace, floor_mib, phases):
    """Markdown: one table per kernel for the phases that ran, configurations as columns."""
    derive(rows)
    out = []
    for kernel in sorted({r["kernel"] for r in rows if r.get("scenario") in PHASES}, reverse=True):
        get = {(r["config"], r["scenario"]): r for r in rows if r["kernel"] == kernel and r.get("scenario") in PHASES}
        rel = next((r.get("release") for r in get.values() if r.get("release")), kernel)
        out += [f"**Linux {rel}, never idle and rebuild**, scale {scale_text(grace)} (grace {grace:g} s, "
                f"trim.interval {trim_interval(grace):g} s, a full-scale minute {60 * scale_of(grace):g} s), "
                f"floor {floor_mib} MiB, hot set {HOT_MIB} MiB\n",
                "| metric | " + " | ".join(configs) + " |", "|---|" + "---|" * len(configs)]
        for scen in (p for p in PHASES if p in phases):
            for label, value, spec in _table_rows(scen, grace):
                cells = []
                for c in configs:
                    r = get.get((c, scen))
                    v = value(r) if r and "error" not in r else None
                    cells.append(_fmt(v, spec))
                out.append(f"| {label} | " + " | ".join(cells) + " |")
        out.append("")
    return "\n".join(out) + "\n"


def sanity(c, rows):
    for r in rows:
        if r.get("scenario") not in PHASES:
            continue
        who = f"{r['kernel']} {r['config']} {r['scenario']}"
        if not c.check("error" not in r, f"{who}: phase complete"):
            continue
        if r["scenario"] == "noisy":
            c.check(r.get("busy_pct") is not None and r["busy_pct"] > 0.5,
                    f"{who}: the machine was busy over the phase ({_fmt(r.get('busy_pct'), '{:.2f}')} %)")
        if r["config"] == "none":
            c.check(r.get("trims") == 0 and r.get("idle_steps") == 0, f"{who}: nothing reclaimed")


# ---- plot ---------------------------------------------------------------------------------

def _series(boot, grace):
    """[(full-scale minutes, run seconds, host RSS MiB, guest file MiB or None)] of the noisy phase."""
    t0, _ = boot.mark("noisy_start", "noisy")
    t1, _ = boot.mark("noisy_end", "noisy")
    if t0 is None or t1 is None:
        return []
    off, minute = boot.cache_offset_kib(), 60 * scale_of(grace)
    return [((s.t - t0) / minute, s.t - t0, s.rss_kib / 1024,
             (s.guest_cache_kib - off) / 1024 if s.guest_cache_kib >= 0 else None)
            for s in boot.samples if t0 <= s.t <= t1]


def plot(out, boots, kernel, grace, configs, title, floor_mib):
    """plot-<kernel>-neveridle.png and the .csv it draws; returns the PNG's path or None."""
    data = {b.config: _series(b, grace) for b in boots if b.kernel == kernel}
    data = {c: s for c, s in data.items() if s}
    if not data:
        return None
    base = os.path.join(out, f"plot-{kernel}-neveridle")
    ddir = os.path.join(out, "plot-data")
    os.makedirs(ddir, exist_ok=True)
    with open(base + ".csv", "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["config", "t_min_fullscale", "t_s", "host_rss_mib", "guest_file_mib"])
        for c in (c for c in configs if c in data):
            with open(os.path.join(ddir, f"{kernel}-{c}-noisy.dat"), "w") as dat:
                for m, t, rss, cache in data[c]:
                    w.writerow([c, f"{m:.3f}", f"{t:.2f}", f"{rss:.1f}", "" if cache is None else f"{cache:.1f}"])
                    dat.write(f"{m:.3f} {rss:.1f} {'NaN' if cache is None else f'{cache:.1f}'}\n")
    bound = (floor_mib + HOT_MIB) * 1.10
    gp = ['set terminal pngcairo size 1120,480 font "sans,9"', f'set output "{base}.png"',
          "set datafile missing 'NaN'", f'set multiplot layout 1,2 title "{title}"', "set grid",
          "set key below horizontal", "set xrange [0:15]", "set yrange [0:*]",
          f"set xlabel 'minutes of background noise (full-scale clock; run at scale {scale_text(grace)})'"]
    for col, ylabel, what in ((2, "host: QEMU RSS, MiB", "footprint on the host"),
                              (3, "guest file cache, MiB", "guest page cache (balloon stats)")):
        gp += ["unset arrow; unset label", f"set ylabel '{ylabel}'", f"set title 'never idle: {what}'"]
        if col == 3:
            for i, (y, name) in enumerate(((floor_mib, f"floor {floor_mib} MiB"),
                                           (bound, f"floor + hot set + 10 % = {bound:.0f} MiB"))):
                gp += [f"set arrow {i + 1} from graph 0, first {y:g} to graph 1, first {y:g} nohead dt 3 "
                       f"lw 1.5 lc rgb '{plotting.FLOOR_COLOUR}'",
                       f"set label {i + 1} '{name}' at graph {0.01 if i == 0 else 0.99}, first {y:g} "
                       f"{'left offset 0,-0.7' if i == 0 else 'right offset 0,0.6'} "
                       f"tc rgb '{plotting.FLOOR_COLOUR}'"]
        parts = []
        for c in plotting.draw_order([c for c in configs if c in data]):
            colour, dt, lw = plotting.style(c, configs)
            parts.append(f"'{ddir}/{kernel}-{c}-noisy.dat' using 1:{col} with lines lw {lw} dt {dt} "
                         f"lc rgb '{colour}' title '{c}'")
        gp.append("plot " + ", ".join(parts))
    gp.append("unset multiplot")
    with open(base + ".gp", "w") as fh:
        fh.write("\n".join(gp) + "\n")
    r = subprocess.run(["gnuplot", base + ".gp"], capture_output=True, text=True)
    if r.returncode != 0:
        print(f"bench: gnuplot failed: {r.stderr.strip()[:500]}", file=sys.stderr)
        return None
    return base + ".png"

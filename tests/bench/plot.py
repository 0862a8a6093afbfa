"""The benchmark's plots: host footprint and guest file cache against time since the end of each
work phase, one PNG per kernel, and beside each the time series it draws, as CSV:

  plot-<kernel>.png          the plot
  plot-<kernel>.csv          config, scenario, t_s (since the work's end), host_rss_mib, guest_file_mib
  plot-<kernel>-events.csv   config, scenario, t_s, event (reclaim_step, dropcache, compact), line

Each configuration has one colour and one dash pattern, the same in every plot (Okabe-Ito,
safe for colour-blind readers); seed-gradual is drawn wide and pale under gradual, so gradual
stays visible where the two coincide. The guest panels draw the floor; markers show reclaimd's
steps (filled) and compactions (open) on each configuration's line.
"""
import csv
import os
import subprocess
import sys

# (colour, gnuplot dash type, line width) per configuration. Okabe & Ito's palette.
STYLES = {
    "none": ("#000000", 1, 1.5),
    "dropcache": ("#E69F00", 2, 2.0),
    "seed-gradual": ("#56B4E9", 4, 4.0),
    "gradual": ("#0072B2", 1, 1.5),
}
SPARE = [("#009E73", 5, 1.5), ("#CC79A7", 3, 1.5), ("#D55E00", 6, 1.5), ("#F0E442", 7, 1.5)]
# Drawn in this order, later on top: gradual over seed-gradual.
ORDER = ["none", "dropcache", "seed-gradual", "gradual"]
# The events marked, and how: filled dot for what reclaims, open circle for compaction.
MARKERS = {"reclaim_step": ("step", 7, 0.7), "dropcache": ("step", 7, 0.7), "compact": ("compact", 6, 1.2)}
FLOOR_COLOUR = "#009E73"


def style(config, configs):
    """The configuration's style: its own if named above, else a spare one by its place."""
    if config in STYLES:
        return STYLES[config]
    others = [c for c in configs if c not in STYLES]
    return SPARE[others.index(config) % len(SPARE)] if config in others else SPARE[0]


def draw_order(configs):
    return sorted(configs, key=lambda c: (ORDER.index(c) if c in ORDER else len(ORDER), configs.index(c)))


def _events(boot, start, stop):
    """[(t, kind, line)] of reclaimd's step and compaction lines between host times start, stop."""
    out = []
    for t, _ph, text in boot.lines:
        if start <= t <= stop and " event=" in text:
            name = text.split(" event=", 1)[1].split()[0]
            if name in MARKERS:
                out.append((t, name, text))
    return out


def _series(boot, scen, start, stop, we):
    """(rows, events) of one boot's scenario, times relative to the work's end we."""
    off = boot.cache_offset_kib()
    rows = []
    for s in boot.samples:
        if start <= s.t <= stop:
            cache = (s.guest_cache_kib - off) / 1024 if s.guest_cache_kib >= 0 else None
            rows.append((round(s.t - we, 2), round(s.rss_kib / 1024, 1), None if cache is None else round(cache, 1)))
    events = []
    for t, name, text in _events(boot, start, stop):
        s = boot.sample_at(t)
        cache = (s.guest_cache_kib - off) / 1024 if s and s.guest_cache_kib >= 0 else None
        events.append((round(t - we, 3), name, text, round(s.rss_kib / 1024, 1) if s else None, cache))
    return rows, events


def collect(boots, kernel, cols, configs):
    """{(config, scen): (rows, events)}, x ranges and shaded-phase marks per scenario."""
    data, marks, xr = {}, {}, {}
    for b in boots:
        if b.kernel != kernel:
            continue
        for scen in cols:
            we, _ = b.mark("work_end", scen)
            if we is None:
                continue
            ws, _ = b.mark("work_start", scen)
            idle_phase = next((p for t, p, x in b.lines if p in ("long", "short") and t > we), None)
            ie, _ = b.mark(f"{idle_phase}_end", idle_phase) if idle_phase else (None, None)
            start = ws - 5 if scen == "archive" else (b.samples[0].t if b.samples else ws)
            stop = ie if ie else (b.samples[-1].t if b.samples else we)
            lo, hi = xr.get(scen, (0, 0))
            xr[scen] = (min(lo, start - we), max(hi, stop - we))
            data[(b.config, scen)] = _series(b, scen, start, stop, we)
            if b.config == configs[0]:
                marks[scen] = {"work": ws - we}
                wa, _ = b.mark("warm_start", "warm") if scen == "build" else (None, None)
                if wa:
                    marks[scen]["warm"] = wa - we
    return data, marks, xr


def write_csvs(out, kernel, data, configs):
    """plot-<kernel>.csv and plot-<kernel>-events.csv: exactly what the plot draws."""
    base = os.path.join(out, f"plot-{kernel}")
    keys = [(c, s) for c in configs for s in ("build", "archive") if (c, s) in data]
    with open(base + ".csv", "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["config", "scenario", "t_s", "host_rss_mib", "guest_file_mib"])
        for c, s in keys:
            for t, rss, cache in data[(c, s)][0]:
                w.writerow([c, s, f"{t:.2f}", f"{rss:.1f}", "" if cache is None else f"{cache:.1f}"])
    with open(base + "-events.csv", "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["config", "scenario", "t_s", "event", "line"])
        for c, s in keys:
            for t, name, text, _rss, _cache in data[(c, s)][1]:
                w.writerow([c, s, f"{t:.3f}", name, text])


def write_dat(ddir, kernel, data):
    """gnuplot's inputs: one series file per (config, scenario), one per marker kind."""
    for (c, s), (rows, events) in data.items():
        with open(os.path.join(ddir, f"{kernel}-{c}-{s}.dat"), "w") as fh:
            for t, rss, cache in rows:
                fh.write(f"{t:.2f} {rss:.1f} {'NaN' if cache is None else f'{cache:.1f}'}\n")
        for kind in sorted({k for k, _pt, _ps in MARKERS.values()}):
            with open(os.path.join(ddir, f"{kernel}-{c}-{s}-{kind}.dat"), "w") as fh:
                for t, name, _text, rss, cache in events:
                    if MARKERS[name][0] == kind:
                        fh.write(f"{t:.3f} {'NaN' if rss is None else rss} "
                                 f"{'NaN' if cache is None else f'{cache:.1f}'}\n")


def _panel_setup(m, scen, lo, hi, grace, floor_mib, col, ylabel, name):
    gp = ["unset arrow; unset label; unset object",
          f"set object 1 rect from {m.get('work', 0):.1f}, graph 0 to 0, graph 1 "
          "fc rgb '#f0e0c0' fs solid 0.5 noborder behind"]
    inside = lo <= m.get("work", 0)  # labels are not clipped: only those in range
    if inside:
        gp.append(f"set label 1 '{scen}' at {m.get('work', 0):.1f}, graph 0.97 left offset 0.3,0")
    gp.append(f"set xrange [{lo:.1f}:{hi:.1f}]")
    if "warm" in m:
        gp.append(f"set object 2 rect from {m['warm']:.1f}, graph 0 to {m['work']:.1f}, graph 1 "
                  "fc rgb '#e0ecf8' fs solid 0.5 noborder behind")
        if inside:
            gp.append(f"set label 2 'warm reread' at {m['warm']:.1f}, graph 0.92 left offset 0.3,0")
    gp.append(f"set arrow 1 from {grace:g}, graph 0 to {grace:g}, graph 1 nohead dt 2 lc rgb '#888888'")
    gp.append(f"set label 3 'grace end' at {grace:g}, graph 0.55 left offset 0.3,0 tc rgb '#666666'")
    if col == 3:
        gp.append(f"set arrow 2 from graph 0, first {floor_mib} to graph 1, first {floor_mib} "
                  f"nohead dt 3 lw 1.5 lc rgb '{FLOOR_COLOUR}'")
        gp.append(f"set label 4 'floor {floor_mib} MiB' at graph 0.99, first {floor_mib} right "
                  f"offset 0,0.6 tc rgb '{FLOOR_COLOUR}'")
    gp.append(f"set ylabel '{ylabel}'")
    what = "footprint on the host" if col == 2 else "guest page cache (balloon stats)"
    gp.append(f"set title '{name}: {what}'")
    gp.append("set yrange [0:*]")
    return gp


def _plot_command(ddir, kernel, scen, col, configs):
    parts = []
    for c in draw_order(configs):
        dat = os.path.join(ddir, f"{kernel}-{c}-{scen}.dat")
        if not os.path.exists(dat):
            continue
        colour, dt, lw = style(c, configs)
        parts.append(f"'{dat}' using 1:{col} with lines lw {lw} dt {dt} lc rgb '{colour}' title '{c}'")
        for kind, pt, ps in sorted({v for v in MARKERS.values()}):
            parts.append(f"'{ddir}/{kernel}-{c}-{scen}-{kind}.dat' using 1:{col} with points "
                         f"pt {pt} ps {ps} lc rgb '{colour}' notitle")
    if parts:
        parts.append("keyentry with points pt 7 ps 0.7 lc rgb '#555555' title 'reclaim step'")
        parts.append("keyentry with points pt 6 ps 1.2 lc rgb '#555555' title 'compaction'")
    return "plot " + ", ".join(parts) if parts else "plot 0 notitle"


def plot(out, boots, kernel, grace, configs, scenarios_done, title, floor_mib):
    """Writes plot-<kernel>.png and its CSVs into out; returns the PNG's path, or None."""
    cols = [s for s in ("build", "archive") if s in scenarios_done]
    if not cols:
        return None  # e.g. --plan warm: nothing over time worth a plot
    ddir = os.path.join(out, "plot-data")
    os.makedirs(ddir, exist_ok=True)
    data, marks, xr = collect(boots, kernel, cols, configs)
    write_csvs(out, kernel, data, configs)
    write_dat(ddir, kernel, data)
    # the build's also zoomed on the grace end, where the seed's gradual figures are (reclaim
    # start, cache at +20 s, footprint at +30 s)
    panels = []
    for scen in cols:
        lo, hi = xr.get(scen, (-1, 1))
        panels.append((scen, (lo, hi + 1), scen))
        if scen == "build":
            panels.append((scen, (0.75 * grace, max(1.5 * grace, grace + 20)), "build, around the grace end"))
    png = os.path.join(out, f"plot-{kernel}.png")
    gp = [f'set terminal pngcairo size {560 * len(panels)},800 font "sans,9"',
          f'set output "{png}"', "set datafile missing 'NaN'",
          f'set multiplot layout 2,{len(panels)} title "{title}"',
          "set grid", "set key below horizontal", "set xlabel 'seconds since the end of the work'"]
    for col, ylabel in ((2, "host: QEMU RSS, MiB"), (3, "guest file cache, MiB")):
        for scen, (lo, hi), name in panels:
            gp += _panel_setup(marks.get(scen, {}), scen, lo, hi, grace, floor_mib, col, ylabel, name)
            gp.append(_plot_command(ddir, kernel, scen, col, configs))
    gp.append("unset multiplot")
    script = os.path.join(out, f"plot-{kernel}.gp")
    with open(script, "w") as fh:
        fh.write("\n".join(gp) + "\n")
    r = subprocess.run(["gnuplot", script], capture_output=True, text=True)
    if r.returncode != 0:
        print(f"bench: gnuplot failed: {r.stderr.strip()[:500]}", file=sys.stderr)
        return None
    return png

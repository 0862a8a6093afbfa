#!/usr/bin/env python3
"""One plot per kernel of a never-idle matrix cell: the host footprint (QEMU's RSS) over time
and, below it, the guest's file cache, one line per configuration, from the boots' series.csv
(tests/bench/matrix.py writes one per boot in logs/<cell>-<kernel>-<config>/).

    # the base cell of one run
    python3 tests/bench/matrixplot.py --runs /tmp/matrix --out /tmp/matrix
    # configurations from several runs: a later --runs directory replaces an earlier one's boot
    # of the same kernel and configuration (e.g. new default-policy runs beside a baseline)
    python3 tests/bench/matrixplot.py --runs '/tmp/matrix-baseline /tmp/matrix-law' --out DIR

Writes to --out, per kernel: plot-<cell>-<kernel>.png and plot-<cell>-<kernel>.csv (config,
t_min, series, mib: exactly the points drawn). Time is in full-scale minutes since the work
ended. Colours and dash patterns are plot.py's (Okabe-Ito); the default policy is drawn as
plot.py's gradual, on top.
"""
import argparse
import csv
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "vm"))
import matrix  # noqa: E402
import plot  # noqa: E402

STYLES = {"none": plot.STYLES["none"], "seed-gradual": plot.STYLES["seed-gradual"],
          "damon": ("#D55E00", 2, 2.0), "default": plot.STYLES["gradual"]}
ORDER = ["none", "seed-gradual", "damon", "default"]  # drawn in this order, later on top
SERIES = ("host_rss_mib", "guest_file_mib")
FLOOR_MIB = matrix.matrixfig.FLOOR_MIB
TARGET_MIN = 5  # the cache is to be at its bound within 5 minutes of the work's end


class PlotError(Exception):
    pass


def read_series(path):
    """{series: [(t_min, mib)]} of one boot's series.csv; PlotError on a malformed file."""
    out = {s: [] for s in SERIES}
    try:
        with open(path, newline="") as fh:
            rows = list(csv.DictReader(fh))
    except (OSError, UnicodeDecodeError, csv.Error) as e:
        raise PlotError(f"{path}: cannot read: {e}") from e
    for n, r in enumerate(rows, 2):
        try:
            name, t, mib = r["series"], float(r["t_min"]), float(r["mib"])
        except (KeyError, TypeError, ValueError):
            raise PlotError(f"{path}:{n}: expected t_min,series,mib with numbers, got {r}") from None
        if name in out:
            out[name].append((t, mib))
    if not out["host_rss_mib"]:
        raise PlotError(f"{path}: no host_rss_mib samples")
    return out


def read_cells(run):
    """{(cell, kernel, config): cells.csv row} of a run (empty if it has none)."""
    path = os.path.join(run, "cells.csv")
    if not os.path.exists(path):
        return {}
    with open(path, newline="") as fh:
        return {(r["cell"], r["kernel"], r["config"]): r for r in csv.DictReader(fh)}


def collect(runs, cell, kernels, configs):
    """{kernel: {config: series}} and {kernel: release}; later runs replace earlier ones."""
    data, release = {}, {}
    for run in runs:
        if not os.path.isdir(run):
            raise PlotError(f"--runs {run}: no such directory")
        rows = read_cells(run)
        for k in kernels:
            for c in configs:
                path = os.path.join(run, "logs", f"{cell}-{k}-{c}", "series.csv")
                if not os.path.exists(path):
                    continue
                data.setdefault(k, {})[c] = read_series(path)
                row = rows.get((cell, k, c), {})
                release[k] = row.get("release") or release.get(k) or k
    if not data:
        raise PlotError(f"no series.csv of cell {cell} for kernels {' '.join(kernels)} and configurations "
                        f"{' '.join(configs)} in {' '.join(runs)}")
    return data, release


def bound_mib(cell):
    """The cache's target: floor + the cell's hot set + 10 % (as matrixfig's figures)."""
    return (FLOOR_MIB + matrix.HOT[matrix.CELLS[cell].hot_pct][1]) * 1.10


def write_csv(path, series):
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["config", "t_min", "series", "mib"])
        for c in draw_order(series):
            for name in SERIES:
                for t, mib in series[c][name]:
                    w.writerow([c, f"{t:.3f}", name, f"{mib:.1f}"])


def draw_order(configs):
    return sorted(configs, key=lambda c: (ORDER.index(c) if c in ORDER else len(ORDER), c))


def style(config):
    return STYLES.get(config, plot.SPARE[0])


def write_dat(ddir, stem, series):
    """gnuplot's inputs, one file per configuration and series."""
    for c, s in series.items():
        for name in SERIES:
            with open(os.path.join(ddir, f"{stem}-{c}-{name}.dat"), "w") as fh:
                fh.writelines(f"{t:.3f} {mib:.1f}\n" for t, mib in s[name])


def _panel(ddir, stem, series, name, ylabel, lines):
    gp = ["unset arrow; unset label",
          "set arrow 1 from 0, graph 0 to 0, graph 1 nohead dt 2 lc rgb '#888888'",
          "set label 1 'work ends' at 0, graph 0.96 left offset 0.3,0 tc rgb '#666666'",
          f"set arrow 2 from {TARGET_MIN}, graph 0 to {TARGET_MIN}, graph 1 nohead dt 3 lc rgb '#888888'",
          f"set label 2 '+{TARGET_MIN} min' at {TARGET_MIN}, graph 0.96 left offset 0.3,0 tc rgb '#666666'",
          f"set ylabel '{ylabel}'", "set yrange [0:*]"]
    for i, (mib, label, colour) in enumerate(lines, 3):
        gp.append(f"set arrow {i} from graph 0, first {mib:g} to graph 1, first {mib:g} "
                  f"nohead dt 3 lw 1.5 lc rgb '{colour}'")
        gp.append(f"set label {i} '{label}' at graph 0.99, first {mib:g} right offset 0,0.6 tc rgb '{colour}'")
    parts = []
    for c in draw_order(series):
        colour, dt, lw = style(c)
        parts.append(f"'{ddir}/{stem}-{c}-{name}.dat' using 1:2 with lines lw {lw} dt {dt} "
                     f"lc rgb '{colour}' title '{c}'")
    return gp + ["plot " + ", ".join(parts)]


def draw(out, cell, kernel, release, series, bound):
    """plot-<cell>-<kernel>.png and .csv into out; returns the PNG's path."""
    stem = f"plot-{cell}-{kernel}"
    ddir = os.path.join(out, "plot-data")
    os.makedirs(ddir, exist_ok=True)
    write_csv(os.path.join(out, stem + ".csv"), series)
    write_dat(ddir, stem, series)
    png = os.path.join(out, stem + ".png")
    ts = [t for s in series.values() for name in SERIES for t, _ in s[name]]
    guest_lines = [(FLOOR_MIB, f"floor {FLOOR_MIB} MiB", plot.FLOOR_COLOUR),
                   (bound, f"floor + hot set + 10 %: {bound:.0f} MiB", "#CC79A7")]
    gp = ['set terminal pngcairo size 900,720 font "sans,9"', f'set output "{png}"',
          f'set multiplot layout 2,1 title "never-idle matrix, cell {cell}: Linux {release}"',
          "set grid", "set key below horizontal", f"set xrange [{min(ts):.2f}:{max(ts):.2f}]",
          "set xlabel 'minutes since the end of the work (full scale)'"]
    gp += ["set title 'footprint on the host (QEMU RSS)'"]
    gp += _panel(ddir, stem, series, "host_rss_mib", "host: QEMU RSS, MiB", [])
    gp += ["set title 'guest file cache'"]
    gp += _panel(ddir, stem, series, "guest_file_mib", "guest file cache, MiB", guest_lines)
    gp.append("unset multiplot")
    script = os.path.join(ddir, stem + ".gp")
    with open(script, "w") as fh:
        fh.write("\n".join(gp) + "\n")
    try:
        r = subprocess.run(["gnuplot", script], capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise PlotError(f"gnuplot: {e}") from e
    if r.returncode != 0:
        raise PlotError(f"gnuplot failed: {r.stderr.strip()[:500]}")
    return png


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--runs", required=True, help="space-separated matrix.py --out directories; later ones win")
    p.add_argument("--cell", default="base")
    p.add_argument("--kernels", default="6.1 6.12 newest")
    p.add_argument("--configs", default=" ".join(ORDER))
    p.add_argument("--out", required=True)
    return p.parse_args(argv)


def main(argv=None):
    a = parse_args(argv)
    if a.cell not in matrix.CELLS:
        print(f"matrixplot: --cell {a.cell}: not one of {' '.join(matrix.CELLS)}", file=sys.stderr)
        return 2
    bound = bound_mib(a.cell)
    try:
        data, release = collect(a.runs.split(), a.cell, a.kernels.split(), a.configs.split())
        os.makedirs(a.out, exist_ok=True)
        for k in a.kernels.split():
            if k in data:
                print(f"matrixplot: {draw(a.out, a.cell, k, release[k], data[k], bound)} "
                      f"({' '.join(draw_order(data[k]))})")
            else:
                print(f"matrixplot: kernel {k}: no series of cell {a.cell}", file=sys.stderr)
    except (PlotError, OSError) as e:
        print(f"matrixplot: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

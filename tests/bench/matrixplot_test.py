#!/usr/bin/env python3
"""matrixplot.py on a small made-up run (no VM): a PNG and its CSV per kernel with exactly the
configurations found, a later run's boot replacing an earlier one's, and bad input refused
with a message instead of a traceback."""
import csv
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "matrixplot.py")
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def boot(run, kernel, config, rss_end):
    """A boot's series.csv: 1000 MiB on the host until the work ends, then rss_end."""
    d = os.path.join(run, "logs", f"base-{kernel}-{config}")
    os.makedirs(d)
    with open(os.path.join(d, "series.csv"), "w") as fh:
        fh.write("t_min,series,mib\n")
        for i in range(-6, 21):
            t = i / 2
            fh.write(f"{t:.3f},host_rss_mib,{1000 if t <= 0 else rss_end:.1f}\n")
            fh.write(f"{t:.3f},guest_file_mib,{500 if t <= 0 else rss_end / 4:.1f}\n")


def run(*args):
    return subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True, timeout=120)


def read_csv(path):
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def check(cond, what):
    if not cond:
        raise SystemExit(f"FAIL: {what}")
    print(f"ok: {what}")


def test_plots(tmp):
    old, new, out = (os.path.join(tmp, n) for n in ("old", "new", "out"))
    for k in ("6.1", "newest"):
        boot(old, k, "none", 1000)
        boot(old, k, "default", 900)
    boot(old, "newest", "damon", 700)
    boot(new, "newest", "default", 600)
    r = run("--runs", f"{old} {new}", "--kernels", "6.1 newest", "--out", out)
    check(r.returncode == 0, f"two runs plotted ({r.stderr.strip()})")
    for k in ("6.1", "newest"):
        with open(os.path.join(out, f"plot-base-{k}.png"), "rb") as fh:
            check(fh.read(8) == PNG_MAGIC, f"plot-base-{k}.png is a PNG")
    rows61 = read_csv(os.path.join(out, "plot-base-6.1.csv"))
    check({r["config"] for r in rows61} == {"none", "default"}, "6.1 has no DAMON line: its kernel has none")
    rows = read_csv(os.path.join(out, "plot-base-newest.csv"))
    check({r["config"] for r in rows} == {"none", "default", "damon"}, "newest draws the three configurations")
    last = [float(r["mib"]) for r in rows if r["config"] == "default" and r["series"] == "host_rss_mib"][-1]
    check(last == 600, f"the later run's default boot replaces the earlier one's (last point {last})")
    check(len(rows) == 3 * 2 * 27, "every sample of every series is in the CSV")


def test_bad_input(tmp):
    r = run("--runs", os.path.join(tmp, "absent"), "--out", os.path.join(tmp, "o1"))
    check(r.returncode != 0 and "no such directory" in r.stderr, "a missing run directory is named")
    empty = os.path.join(tmp, "empty")
    os.makedirs(empty)
    r = run("--runs", empty, "--out", os.path.join(tmp, "o2"))
    check(r.returncode != 0 and "no series.csv" in r.stderr, "a run without boots is refused")
    bad = os.path.join(tmp, "bad")
    boot(bad, "6.12", "none", 1000)
    with open(os.path.join(bad, "logs", "base-6.12-none", "series.csv"), "a") as fh:
        fh.write("x,host_rss_mib,12\n")
    r = run("--runs", bad, "--out", os.path.join(tmp, "o3"))
    check(r.returncode != 0 and "series.csv:" in r.stderr and "Traceback" not in r.stderr,
          "a malformed sample is refused with its file and line")
    r = run("--runs", bad, "--cell", "nope", "--out", os.path.join(tmp, "o4"))
    check(r.returncode != 0 and "--cell nope" in r.stderr, "an unknown cell is refused")


def main():
    with tempfile.TemporaryDirectory() as tmp:
        test_plots(tmp)
        test_bad_input(tmp)
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""The never-idle matrix: cells x configurations x kernels side by side, one VM boot each.

A cell (guest/matrix.sh) is the hard order: the background process (an editor, a language
server) already runs and re-reads its hot set BEFORE and DURING the work that fills the cold
cache, so the hot set is older in the LRU than the cold cache; the work ends, the background
process goes on. The base cell: the work reads 400 MiB of cold files twice, the hot set is
100 MiB (20 % of the cache) re-read with read() every 20 s, all in one cgroup (work.slice).
Every other cell changes one axis of it (CELLS). Time is scaled (--scale, default 1/12: a
minute is 5 s): the daemon's grace, trimming interval and refault window, DAMON_RECLAIM's
min_age and the scenario's periods alike.

Configurations: none; seed-gradual (WSL's gradual timing: reclaim only when idle); default
(reclaimd's own policy); damon (the kernel's DAMON_RECLAIM as a user switches it on); damos (a
DAMON sysfs scheme a controller could run instead of probing: every grace, page out
work.slice's pages not accessed since the last pass, per folio by DAMON's young filter).

    python3 tests/bench/matrix.py --reclaimd build/controller/reclaimd \\
        --cells 'base once' --kernels '6.1 6.12 newest' --configs 'none default damon' \\
        --jobs 2 --out /tmp/matrix
    # two builds of the daemon in one run:
    python3 tests/bench/matrix.py --reclaimd build/controller/reclaimd \\
        --configs 'none default new=default@/tmp/new/reclaimd' --out /tmp/matrix-ab

Writes cells.csv (every figure, one row per cell x config x kernel), table.md (the same as a
markdown table) and logs/ to --out. See tests/bench/README.md ("The never-idle matrix").
"""
import argparse
import concurrent.futures
import datetime
import os
import re
import subprocess
import sys
import threading
import time
from typing import NamedTuple

HERE = os.path.dirname(os.path.abspath(__file__))
VM_DIR = os.path.join(HERE, "..", "vm")
sys.path.insert(0, VM_DIR)
sys.path.insert(0, HERE)
import hostmon  # noqa: E402
import kernels  # noqa: E402
import matrixfig  # noqa: E402
import vm  # noqa: E402
import vmext  # noqa: E402
from boots import Boot  # noqa: E402

MEM_MIB = 2048
DATA = "4x100,100,25"  # file0-3: the cold files (400 MiB); file4: a 100 MiB hot set, file5: 25 MiB
HOT = {20: ("/data/file4", 100), 5: ("/data/file5", 25)}  # % of the cache -> (file, MiB)
BG = {"same": "work.slice", "apart": "bg.slice", "unit": "system.slice/editor.service"}
# Full-scale seconds, multiplied by --scale: the daemon's idle grace, idle interval, trimming
# interval and refault window, the seed's fixed ticks and DAMON_RECLAIM's min_age (all their defaults).
GRACE, TRIM_INTERVAL, REFAULT_WINDOW, SEED_TICK, DAMON_MIN_AGE = 120.0, 6.0, 10.0, 10.0, 120.0
# The kernel's writeback timing (vm.dirty_expire_centisecs, vm.dirty_writeback_centisecs: their
# defaults), scaled as the rest where the work writes: unscaled, written cache would stay dirty
# six scaled minutes.
DIRTY_EXPIRE_CS, DIRTY_WRITEBACK_CS = 3000, 500
IDLE_INTERVAL = 10.0
WARM_MIN = 2  # full-scale minutes the hot reader runs before the work starts
AGAIN_MIN = 10  # full-scale minutes between a cell's two episodes of work (an edit-and-rebuild loop)


class Cell(NamedTuple):
    cold: str          # once | twice | mmap (twice, through a mapping) | write (written, not read)
    hot_period_s: float
    hot_pct: int       # 20 | 5
    hot_mode: str      # read | mmap (a process that keeps the mapping and touches it)
    bg: str            # same | apart | unit
    hot_start: str = "before"  # before the work | mid (between its two halves of cold files)
    hot_owner: str = "bg"      # bg | work: the work's cgroup read the hot set first, so its pages
    #                            are charged there (a build's output an editor keeps opening)
    episodes: int = 1          # 2: the work runs again AGAIN_MIN after its first end; the figures
    #                            follow the second (what the first taught the kernel and the law stays)


BASE = Cell("twice", 20, 20, "read", "same")
CELLS = {
    "base": BASE,
    "once": BASE._replace(cold="once"),
    "cold-mmap": BASE._replace(cold="mmap"),
    "write": BASE._replace(cold="write"),
    "hot-1s": BASE._replace(hot_period_s=1),
    "hot-60s": BASE._replace(hot_period_s=60),
    "hot-5pct": BASE._replace(hot_pct=5),
    "hot-mmap": BASE._replace(hot_mode="mmap"),
    "bg-apart": BASE._replace(bg="apart"),
    "bg-unit": BASE._replace(bg="unit"),
    "hot-mid": BASE._replace(hot_start="mid"),
    "bg-shared": BASE._replace(bg="apart", hot_owner="work"),
    "again": BASE._replace(episodes=2),
    "again-60s": BASE._replace(hot_period_s=60, episodes=2),
}
# The guest runs a first episode only where the hot reader starts before the work (matrix.sh): a
# cell of two with the reader starting midway would silently run one.
assert all(c.episodes == 1 or c.hot_start == "before" for c in CELLS.values())
KINDS = ("none", "seed-gradual", "default", "damon", "damos")
NO_DAEMON = ("none", "damon", "damos")  # the kinds that run no reclaimd


class Config(NamedTuple):
    name: str
    kind: str
    binary: str = ""


def _dur(seconds):
    return f"{int(round(seconds * 1000))}ms"


def policy(kind, scale):
    """The policy file's lines for a reclaimd configuration at this time scale."""
    grace = GRACE * scale
    lines = ["idle:", f"  grace: {_dur(grace)}"]
    if kind == "seed-gradual":  # WSL's gradual mode: fixed ticks, reclaim only when idle
        tick = min(grace, max(1.0, SEED_TICK * scale))
        return ["mode: gradual"] + lines + [f"  interval: {_dur(tick)}", f"  sample_period: {_dur(tick)}",
                                            "  predict: false", "trim:", "  enabled: false"]
    # idle.interval (10 s) scaled too: it is the span the current busy share is judged over, and
    # trimming waits while that share is heavy work, so at full length it would hold the first
    # probe two scaled minutes after the work. At least 1 s, at most the grace.
    lines.append(f"  interval: {_dur(min(grace, max(1.0, IDLE_INTERVAL * scale)))}")
    return lines + ["trim:", f"  interval: {_dur(max(0.5, TRIM_INTERVAL * scale))}",
                    "pressure:", f"  refault_window: {_dur(max(1.0, REFAULT_WINDOW * scale))}"]


def parse_configs(text, reclaimd):
    """'none default new=default@/path' -> [Config]; raises ValueError with a clear message."""
    out = []
    for item in text.split():
        name, _, rest = item.partition("=")
        if not re.fullmatch(r"[\w.+-]+", name):
            raise ValueError(f"configuration {item!r}: a name of letters, digits and . _ + - before the '='")
        kind, _, binary = (rest or name).partition("@")
        if kind not in KINDS:
            raise ValueError(f"configuration {item!r}: unknown kind {kind!r} (one of {', '.join(KINDS)})")
        if kind in NO_DAEMON and binary:
            raise ValueError(f"configuration {item!r}: {kind} runs no reclaimd binary")
        binary = binary or (reclaimd if kind not in NO_DAEMON else "")
        if kind not in NO_DAEMON and not (binary and os.access(binary, os.X_OK)):
            raise ValueError(f"configuration {item!r}: no executable reclaimd ({binary or 'give --reclaimd'})")
        if any(c.name == name for c in out):
            raise ValueError(f"configuration {name!r} given twice")
        out.append(Config(name, kind, os.path.abspath(binary) if binary else ""))
    return out


def guest_env(cell, cfg, scale, minutes, phase=0.0):
    """`phase`: the work starts this fraction of the hot set's period later (where its end falls
    between the hot set's reads: a boot is otherwise the same phase every time)."""
    hot_file, hot_mib = HOT[cell.hot_pct]
    return {"CONTROLLER": "reclaimd" if cfg.binary else cfg.kind, "COLD": cell.cold, "HOT_FILE": hot_file,
            "HOT_MIB": hot_mib, "HOT_START": cell.hot_start,
            "HOT_MODE": cell.hot_mode, "HOT_PERIOD_MS": max(500, int(cell.hot_period_s * scale * 1000)),
            "HOT_OWNER": "work.slice" if cell.hot_owner == "work" else "",
            "BG_CGROUP": BG[cell.bg], "WARM_MS": int((WARM_MIN * 60 + phase * cell.hot_period_s) * scale * 1000),
            "OBSERVE_MS": int(minutes * 60 * scale * 1000),
            "AGAIN_MS": int(AGAIN_MIN * 60 * scale * 1000) if cell.episodes > 1 else 0,
            "DAMON_MIN_AGE_US": int(DAMON_MIN_AGE * scale * 1e6), "DAMOS_INTERVAL_US": int(GRACE * scale * 1e6),
            "DIRTY_EXPIRE_CS": max(1, int(DIRTY_EXPIRE_CS * scale)),
            "DIRTY_WRITEBACK_CS": max(1, int(DIRTY_WRITEBACK_CS * scale))}


def has_damon(kernel, option="CONFIG_DAMON_RECLAIM"):
    """Whether the kernel is built with `option`: DAMON_RECLAIM, or DAMON's sysfs interface for
    damos (Debian's 6.1 is built without DAMON)."""
    try:
        with open(kernels.ensure(kernel).config) as fh:
            return any(line.strip() == f"{option}=y" for line in fh)
    except OSError:
        return False


def build_mtouch(out):
    """The guest's mmap toucher, compiled for the host's libc (the initramfs takes its deps)."""
    exe = os.path.join(out, "mtouch")
    try:
        subprocess.run(["cc", "-O2", "-Wall", "-Werror", "-o", exe, os.path.join(VM_DIR, "guest", "mtouch.c")],
                       check=True)
    except (OSError, subprocess.CalledProcessError) as e:
        raise SystemExit(f"matrix: cannot build the guest's mmap toucher with cc: {e}")
    return exe


def run_boot(cell_name, cfg, kernel, a, mtouch, phase=0.0, boot_no=1, tag=""):
    """One boot: (Boot, its cells.csv row). a: scale, minutes, out, verbose. `phase` as
    guest_env's; `boot_no` counts the boots of one phase; `tag` ends the log folder's name."""
    cell = CELLS[cell_name]
    boot = Boot(kernel, cfg.name)
    boot.release = kernels.ensure(kernel).release
    which = {"cell": cell_name, "kernel": kernel, "release": boot.release, "config": cfg.name, "phase": phase,
             "boot": boot_no}
    if cfg.kind == "damon" and not has_damon(kernel):
        return boot, dict(which, outcome="n/a: the kernel has no DAMON_RECLAIM")
    if cfg.kind == "damos" and not has_damon(kernel, "CONFIG_DAMON_SYSFS"):
        return boot, dict(which, outcome="n/a: the kernel has no DAMON sysfs interface")
    log_dir = os.path.join(a.out, "logs", f"{cell_name}-{kernel}-{cfg.name}{tag}")
    os.makedirs(log_dir, exist_ok=True)
    adds = [(os.path.join(VM_DIR, "guest", "lib.sh"), "/test/lib.sh"), (mtouch, "/usr/bin/mtouch")]
    if cfg.binary:
        pol = os.path.join(log_dir, "policy.yaml")
        with open(pol, "w") as fh:
            fh.write("\n".join(policy(cfg.kind, a.scale)) + "\n")
        adds.append((pol, "/etc/matrix/policy.yaml"))
    # Every guest carries a reclaimd binary, run or not: its initramfs copy (38 MiB with debug
    # information) is guest RAM the host holds, ~140 MiB of footprint on 2026-12-02, and a
    # configuration without it would look that much smaller.
    if cfg.binary or a.reclaimd:
        adds.append((cfg.binary or a.reclaimd, "/usr/bin/reclaimd"))
    mon = hostmon.HostMonitor(MEM_MIB)
    # A first episode adds its gap and its own run (the work takes well under 5 full-scale minutes).
    budget = 180 + (WARM_MIN + a.minutes + (AGAIN_MIN + 5 if cell.episodes > 1 else 0)) * 60 * a.scale
    boot.result = vmext.run(os.path.join(VM_DIR, "guest", "matrix.sh"), kernel=kernel, add=adds,
                            disk=vm.data_image(DATA), mem_mib=MEM_MIB,
                            env=dict(guest_env(cell, cfg, a.scale, a.minutes, phase), **lru_env(a)),
                            timeout=budget, log_dir=log_dir,
                            on_line=boot.add, on_qemu_start=mon.attach, echo=a.verbose)
    mon.stop()
    boot.samples = mon.samples
    matrixfig.write_series(boot, os.path.join(log_dir, "series.csv"), a.scale)
    return boot, dict(matrixfig.figures(boot, cell_name, a.scale, HOT[cell.hot_pct][1]), phase=phase, boot=boot_no)


def lru_env(a):
    """The guest's environment for --lru-gen and --mglru."""
    env = {"LRU_GEN": "1"} if getattr(a, "lru_gen", False) else {}
    if getattr(a, "mglru", None):
        env["MGLRU"] = {"on": "y", "off": "n"}[a.mglru]
    return env


def sanity(rows):
    """The pipeline ran and the scenario held (figures are reported, not asserted)."""
    bad = []
    for r in rows:
        who = f"{r['cell']} {r['kernel']} {r['config']}"
        if r["outcome"].startswith("n/a"):
            continue
        if r["outcome"] != "ok" or "cache_end_mib" not in r:
            bad.append(f"{who}: {r['outcome']}")
            continue
        if r.get("cache_work_end_mib", 0) < 400:
            bad.append(f"{who}: the work did not fill the cache ({r.get('cache_work_end_mib')} MiB)")
        if r["config"] == "none" and r["cache_end_mib"] < 0.9 * r["cache_work_end_mib"]:
            bad.append(f"{who}: the cache shrank without a controller ({r['cache_end_mib']} MiB)")
    for b in bad:
        print(f"matrix: FAILED {b}", file=sys.stderr)
    return not bad


def _fraction(text):
    num, _, den = text.partition("/")
    try:
        v = float(num) / float(den or 1)
    except (ValueError, ZeroDivisionError):
        raise argparse.ArgumentTypeError(f"not a number or fraction: {text!r}")
    if not 0 < v <= 1:
        raise argparse.ArgumentTypeError(f"scale must be in (0, 1], not {text!r}")
    return v


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    p.add_argument("--reclaimd", help="the reclaimd binary of the configurations that name none")
    p.add_argument("--cells", default="base", help=f"space-separated, from: {' '.join(CELLS)}")
    p.add_argument("--kernels", default="newest", help=f"space-separated, from: {' '.join(kernels.SERIES)}")
    p.add_argument("--configs", default="none default", help="space-separated: none, seed-gradual, default, "
                   "damon, damos, or NAME=KIND[@/path/to/reclaimd] (e.g. new=default@/tmp/new/reclaimd)")
    p.add_argument("--scale", type=_fraction, default=1 / 12, help="time scale (default 1/12: a minute is 5 s)")
    p.add_argument("--minutes", type=float, default=10, help="full-scale minutes observed after the work's end")
    p.add_argument("--phases", default="0", help="space-separated fractions (0 to 1): the work starts this "
                   "fraction of the hot set's period later, where its end falls between the hot set's reads (boots "
                   "of one phase repeat it); every cell runs at each")
    p.add_argument("--repeat", type=int, default=1, help="boots of every cell, kernel, configuration and phase")
    p.add_argument("--jobs", type=int, default=1, help="boots run in parallel")
    p.add_argument("--smoke", action="store_true", help="CI: cell base, 6.12, none and default, scale 1/25, "
                   "6 minutes observed")
    p.add_argument("--lru-gen", action="store_true", help="MGLRU kernels: the guest logs its cache's "
                   "generations and tiers (debugfs lru_gen_full, work.slice's block) every 5 samples, as @@LRUGEN "
                   "lines in test.log: where the kernel keeps the hot set, and whether it protects it")
    p.add_argument("--mglru", choices=("on", "off"), help="the guest switches the kernel's multi-gen LRU on or "
                   "off before the run (Debian's 6.1 builds it in, off; its @@MGLRU line says what it was); default: "
                   "as the kernel boots")
    p.add_argument("--out", default="/tmp/reclaimd-matrix")
    p.add_argument("--verbose", action="store_true", help="echo the guest's lines")
    a = p.parse_args(argv)
    if a.smoke:
        a.cells, a.kernels, a.configs, a.scale, a.minutes = "base", "6.12", "none default", 1 / 25, 6
    for c in a.cells.split():
        if c not in CELLS:
            p.error(f"unknown cell {c!r} (one of {', '.join(CELLS)})")
    for k in a.kernels.split():
        if k not in kernels.SERIES:
            p.error(f"unknown kernel {k!r} (one of {', '.join(kernels.SERIES)})")
    if a.jobs < 1 or a.minutes < 3 or a.repeat < 1:
        p.error("--jobs and --repeat must be at least 1 and --minutes at least 3")
    try:
        a.phase_list = [float(x) for x in a.phases.split()]
    except ValueError:
        p.error(f"--phases: fractions like 0.2, not {a.phases!r}")
    bad = [x for x in a.phase_list if not 0 <= x < 1]
    if bad or not a.phase_list or len(set(a.phase_list)) < len(a.phase_list):
        p.error(f"--phases: distinct fractions, each at least 0 and under 1, not {a.phases!r}")
    try:
        a.config_list = parse_configs(a.configs, a.reclaimd)
    except ValueError as e:
        p.error(str(e))
    return a


def main(argv=None):
    a = parse_args(argv)
    cells, kern = a.cells.split(), a.kernels.split()
    try:
        os.makedirs(a.out, exist_ok=True)
    except OSError as e:
        raise SystemExit(f"matrix: cannot use --out {a.out}: {e}")
    started = datetime.datetime.now(datetime.timezone.utc)
    head = (f"Run {started:%Y-%m-%d %H:%M} UTC, scale {a.scale:.4g} (a minute is {60 * a.scale:g} s), "
            f"{a.minutes:g} minutes after the work, `tests/bench/matrix.py "
            f"{' '.join(argv if argv is not None else sys.argv[1:])}`")
    many = len(a.phase_list) > 1 or a.repeat > 1
    jobs = [(c, cfg, k, ph, n) for c in cells for k in kern for cfg in a.config_list for ph in a.phase_list
            for n in range(1, a.repeat + 1)]
    per = 40 + (WARM_MIN + a.minutes) * 60 * a.scale
    print(f"matrix: {len(jobs)} boots, {a.jobs} at a time: ~{len(jobs) * per / a.jobs / 60:.0f} min; "
          f"output in {a.out}", flush=True)
    for k in kern:
        kernels.ensure(k)
    vm.data_image(DATA)
    mtouch = build_mtouch(a.out)
    rows, lock = [], threading.Lock()
    order = {(c, k, cfg.name, ph, n): i for i, (c, cfg, k, ph, n) in enumerate(jobs)}
    names = [c.name for c in a.config_list]

    def one(job):
        t = time.monotonic()
        cell, cfg, k, ph, n = job
        tag = (f"-p{ph:g}" if len(a.phase_list) > 1 else "") + (f"-b{n}" if a.repeat > 1 else "")
        _, row = run_boot(cell, cfg, k, a, mtouch, ph, n, tag)
        with lock:
            rows.append(row)
            rows.sort(key=lambda r: order[(r["cell"], r["kernel"], r["config"], r["phase"], r["boot"])])
            matrixfig.write_csv(a.out, rows)  # after every boot: a run cut short keeps its data
            with open(os.path.join(a.out, "table.md"), "w") as fh:
                fh.write(matrixfig.table(rows, cells, names, kern, head))
                fh.write("\n" + matrixfig.totals(rows, names, kern))
                if many:
                    fh.write("\n" + matrixfig.summary(rows, cells, names, kern))
            print(f"matrix: {cell} {k} {cfg.name}{tag}: {row['outcome']}, at bound after "
                  f"{row.get('bound_min')} min, done in {time.monotonic() - t:.0f} s", flush=True)

    with concurrent.futures.ThreadPoolExecutor(max_workers=a.jobs) as pool:
        for f in [pool.submit(one, j) for j in jobs]:
            f.result()
    print(matrixfig.table(rows, cells, names, kern, head))
    print(matrixfig.totals(rows, names, kern))
    if many:
        print(matrixfig.summary(rows, cells, names, kern))
    return 0 if sanity(rows) else 1


if __name__ == "__main__":
    sys.exit(main())

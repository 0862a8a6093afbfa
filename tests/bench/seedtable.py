"""The seed's table (bench.py): figures of the warm, build and archive phases, the CSVs and the
markdown table."""
import csv
import os
import re

FLOOR_MIB = 128
THRESHOLD_PCT = 0.5


# ---- figures ------------------------------------------------------------------------------

def _first_below(samples, t0, t1, limit_kib):
    for s in samples:
        if t0 <= s.t <= t1 and s.rss_kib <= limit_kib:
            return s.t - t0
    return None


def scenario_figures(boot, phase, idle_phase, grace):
    """Figures for the work phase `phase` ("build"/"archive") and the idle that follows."""
    f = {"kernel": boot.kernel, "release": boot.release, "config": boot.config,
         "scenario": phase}
    ws, _ = boot.mark("work_start", phase)
    we, _ = boot.mark("work_end", phase)
    ie, _ = boot.mark(f"{idle_phase}_end", idle_phase)
    if ws is None or we is None or ie is None or not boot.samples:
        f["error"] = "phase incomplete"
        return f
    f["work_s"] = we - ws
    f["idle_s"] = ie - we
    grace_end = we + grace
    # reclaim start: the first action after the work, at its start (lines come at the end);
    # probes of a busy machine (kind=trim) are not the idle period's reclaim: counted apart
    acts = [(t - float(e.get("took_ms", 0)) / 1000, e.get("event")) for t, e in
            boot.events(phase=idle_phase) if e.get("event") in ("reclaim_step", "dropcache")
            and e.get("kind") != "trim"]
    f["trims"] = len([1 for _, e in boot.events(phase=idle_phase)
                      if e.get("event") == "reclaim_step" and e.get("kind") == "trim"])
    if acts:
        f["reclaim_start_after_grace_s"] = acts[0][0] - grace_end
        f["first_action"] = acts[0][1]
    entered = boot.events("idle_entered", idle_phase)
    if entered:
        f["idle_entered_after_grace_s"] = entered[0][0] - grace_end
        # Where the daemon's detector put the work's end, against the guest's mark: the machine's
        # own tail of work after the mark, when positive.
        since = entered[0][1].get("since_work_s", "")
        if re.fullmatch(r"\d+(\.\d+)?", since):
            f["work_end_judged_after_mark_s"] = entered[0][0] - float(since) - we
    f["actions"] = len(acts)
    # host footprint
    before = [s for s in boot.samples if s.t <= ws]
    base = before[-1] if before else boot.samples[0]
    peak = boot.sample_at(we)
    end = [s for s in boot.samples if s.t <= ie][-1]
    f["footprint_before_mib"] = base.rss_kib / 1024
    f["footprint_work_end_mib"] = peak.rss_kib / 1024
    f["footprint_end_mib"] = end.rss_kib / 1024
    f["ram_rss_end_mib"] = end.ram_rss_kib / 1024
    f["cut50_s"] = _first_below(boot.samples, we, ie, peak.rss_kib * 0.5)
    f["cut50_added_s"] = _first_below(boot.samples, we, ie,
                                      base.rss_kib + 0.5 * (peak.rss_kib - base.rss_kib))
    at = boot.sample_within(we + grace + 30, ie)
    if at:
        f["footprint_grace30_mib"] = at.rss_kib / 1024
    off = boot.cache_offset_kib()
    at = boot.sample_within(we + grace + 20, ie)
    if at and at.guest_cache_kib >= 0:
        f["cache_grace20_mib"] = (at.guest_cache_kib - off) / 1024
    at = boot.sample_within(we + grace - 2, ie)
    if at and at.guest_cache_kib >= 0:
        f["cache_before_grace_mib"] = (at.guest_cache_kib - off) / 1024
    # guest memory at the ends (in-guest meminfo)
    _, m0 = boot.mem("work_end", phase)
    _, m1 = boot.mem(f"{idle_phase}_end", idle_phase)
    if m0 and m1:
        f["file_work_end_mib"] = m0["file_kib"] / 1024
        f["file_end_mib"] = m1["file_kib"] / 1024
        f["reclaimable_end_mib"] = m1["reclaimable_kib"] / 1024
        f["used_end_mib"] = (m1["total_kib"] - m1["free_kib"]) / 1024
    # guest CPU over the idle stretch
    c = {n: fl for _, n, fl in boot.parsed("@@CPU", idle_phase)}
    a, b = c.get(f"{idle_phase}_start"), c.get(f"{idle_phase}_end")
    if a and b:
        busy = int(b["busy"]) - int(a["busy"])
        total = busy + int(b["idle"]) - int(a["idle"])
        f["idle_busy_pct"] = 100.0 * busy / total if total else None
    return f


def warm_figures(boot):
    f = {"kernel": boot.kernel, "config": boot.config}
    times, gtimes, disk, hosts = [], [], [], []
    d = {n: int(fl["read_sectors"]) for _, n, fl in boot.parsed("@@DISK", "warm")}
    i = 1
    while True:
        a, fa = boot.mark(f"reread_{i}_start", "warm")
        b, fb = boot.mark(f"reread_{i}_end", "warm")
        if a is None or b is None:
            break
        times.append(b - a)
        near = [s.host_busy_pct for s in boot.samples if a - 0.5 <= s.t <= b + 1.0]
        if near and max(near) >= 0:
            hosts.append(max(near))
        gtimes.append((int(fb["t_ms"]) - int(fa["t_ms"])) / 1000)
        disk.append((d.get(f"reread_{i}_end", 0) - d.get(f"reread_{i}_start", 0)) * 512 / 2**20)
        i += 1
    if times:
        # best of the cycles: the cores are shared, and a slow outlier is the host's, not the
        # cache's (the disk column says whether the cache survived the pause)
        f["reread_s"] = min(times)
        f["reread_guest_s"] = min(gtimes)
        f["reread_all_s"] = " ".join(f"{x:.3f}" for x in times)
        f["reread_disk_mib"] = max(disk)
    if hosts:  # the host's two CPUs: QEMU alone keeps one busy (50 %); more is someone else
        f["reread_host_busy_pct"] = max(hosts)
    f["warm_actions"] = len([1 for _, e in boot.events(phase="warm")
                             if e.get("event") in ("reclaim_step", "dropcache")])
    return f


def reclaimd_figures(boot):
    r = boot.parsed("@@RECLAIMD")
    ex = boot.parsed("@@EXIT")
    if not r:
        return {}
    fl = r[0][2]
    return {"reclaimd_cpu_s": (int(fl["utime"]) + int(fl["stime"])) / 100,
            "reclaimd_hwm_mib": int(fl["hwm_kib"]) / 1024,
            "reclaimd_exit": ex[0][2].get("code") if ex else None}


# ---- output -------------------------------------------------------------------------------

def write_csvs(out, boots, rows):
    with open(os.path.join(out, "samples.csv"), "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["kernel", "config", "t_boot_s", "t_build_end_s", "rss_mib", "ram_rss_mib",
                    "guest_used_mib", "guest_file_mib", "host_busy_pct", "qemu_cpu_s"])
        for b in boots:
            if not b.samples:
                continue
            t0 = b.samples[0].t
            we, _ = b.mark("work_end", "build")
            off = b.cache_offset_kib()
            for s in b.samples:
                used = (s.guest_total_kib - s.guest_free_kib) / 1024 if s.guest_total_kib > 0 else ""
                cache = (s.guest_cache_kib - off) / 1024 if s.guest_cache_kib >= 0 else ""
                w.writerow([b.kernel, b.config, f"{s.t - t0:.2f}",
                            f"{s.t - we:.2f}" if we else "", f"{s.rss_kib / 1024:.1f}",
                            f"{s.ram_rss_kib / 1024:.1f}",
                            f"{used:.1f}" if used != "" else "", f"{cache:.1f}" if cache != "" else "",
                            s.host_busy_pct, s.qemu_cpu_s])
    with open(os.path.join(out, "events.csv"), "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["kernel", "config", "t_boot_s", "phase", "line"])
        for b in boots:
            t0 = b.samples[0].t if b.samples else 0
            for t, ph, text in b.lines:
                if text.startswith("@@") or " event=" in text:
                    w.writerow([b.kernel, b.config, f"{t - t0:.3f}", ph or "", text])
    keys = []
    for r in rows:
        keys += [k for k in r if k not in keys]
    with open(os.path.join(out, "figures.csv"), "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=keys)
        w.writeheader()
        for r in rows:
            w.writerow({k: (f"{v:.3f}" if isinstance(v, float) else v) for k, v in r.items()})


def _fmt(v, spec="{:.1f}", none="-"):
    return none if v is None else spec.format(v)


def _derive(rows):
    """Cells that combine figures: footprint pairs, cache pairs, reread ratio to no controller."""
    base = {r["kernel"]: r.get("reread_s") for r in rows
            if r.get("scenario") == "warm" and r["config"] == "none"}
    for r in rows:
        if "footprint_before_mib" in r:
            r["_fp_pair"] = f"{r['footprint_before_mib']:.0f} / {r['footprint_work_end_mib']:.0f}"
        if "file_end_mib" in r:
            r["_cache_pair"] = f"{r['file_end_mib']:.0f} / {r['reclaimable_end_mib']:.0f}"
        if r.get("scenario") == "warm" and r.get("reread_s") and base.get(r["kernel"]):
            r["reread_ratio"] = r["reread_s"] / base[r["kernel"]]


def render_table(rows, configs, grace, scenarios_done):
    """Markdown: one table per kernel, metrics as rows, configurations as columns."""
    _derive(rows)
    out = []
    for kernel in sorted({r["kernel"] for r in rows}, reverse=True):
        get = {(r["config"], r.get("scenario")): r for r in rows if r["kernel"] == kernel}
        rel = next((r.get("release") for r in rows if r["kernel"] == kernel and r.get("release")), kernel)
        out.append(f"**Linux {rel}**, grace {grace:g} s, guest 3 GiB / 1 vCPU (QEMU TCG), "
                   f"footprint = QEMU RSS with free page reporting\n")
        out.append("| metric | " + " | ".join(configs) + " |")
        out.append("|---|" + "---|" * len(configs))

        def row(label, scen, key, spec="{:.1f}", none="-"):
            cells = [_fmt(get[(c, scen)].get(key), spec, none) if (c, scen) in get and
                     "error" not in get[(c, scen)] else "-" for c in configs]
            if all(x == "-" for x in cells):
                return  # not measured in this run (e.g. an older run's raw data)
            out.append(f"| {label} | " + " | ".join(cells) + " |")

        for scen, name in (("build", "Build"), ("archive", "Archive")):
            if scen not in scenarios_done:
                continue
            idle = get.get((configs[0], scen), {}).get("idle_s")
            row(f"{name}: reclaim start after grace end, s (target < 1)", scen,
                "reclaim_start_after_grace_s", "{:+.2f}", "none")
            row(f"{name}: 50 % footprint cut after work end, s (target {grace + 10:g})", scen,
                "cut50_s", "{:.0f}", "never")
            row(f"{name}: half of the work's footprint returned, s", scen, "cut50_added_s",
                "{:.0f}", "never")
            row(f"{name}: footprint before work / at work end, MiB", scen, "_fp_pair", "{}")
            row(f"{name}: footprint at grace + 30 s, MiB", scen, "footprint_grace30_mib", "{:.0f}")
            row(f"{name}: guest file cache at grace + 20 s, MiB", scen, "cache_grace20_mib", "{:.0f}")
            row(f"{name}: footprint after {_fmt(idle, '{:.0f}')} s idle, MiB", scen,
                "footprint_end_mib", "{:.0f}")
            row(f"{name}: guest file cache / reclaimable at the end, MiB "
                f"(gradual target <= {FLOOR_MIB * 1.05:.0f})", scen, "_cache_pair", "{}")
            row(f"{name}: guest CPU busy over the idle stretch, % (idle <= {THRESHOLD_PCT})",
                scen, "idle_busy_pct", "{:.3f}")
        if "warm" in scenarios_done:
            row(f"Warm reread after a {grace / 2:g} s pause, s (best of the cycles)", "warm", "reread_s", "{:.3f}")
            row("Warm reread: ratio to no controller (target <= 1.02)", "warm", "reread_ratio", "{:.3f}")
            row("Warm reread: MiB read from disk", "warm", "reread_disk_mib", "{:.1f}")
            row("Warm reread: host CPUs busy around the rereads, % (QEMU alone: 50)", "warm",
                "reread_host_busy_pct", "{:.0f}")
        row("reclaimd CPU time over the boot, s", "boot", "reclaimd_cpu_s", "{:.2f}", "n/a")
        row("reclaimd peak RSS (VmHWM), MiB", "boot", "reclaimd_hwm_mib", "{:.1f}", "n/a")
        out.append("")
    return "\n".join(out) + "\n"

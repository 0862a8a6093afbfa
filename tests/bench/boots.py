"""One VM boot of the benchmark as the host saw it (bench.py): the guest's lines, host-stamped,
and the host's samples; saved as raw/<series>-<config>.json so --report can redo everything."""
import json
import os
import statistics
import time

import hostmon
import scenario
import vmext


class Boot:
    """What one VM boot printed, host-stamped, with the host samples."""

    def __init__(self, kernel, config):
        self.kernel, self.config = kernel, config
        self.lines = []       # (t, phase, text)
        self.phase = None
        self.samples = []
        self.result = None
        self.release = None

    def add(self, text):
        t = time.monotonic()
        text = text.rstrip("\r\n")
        if text.startswith("@@PHASE "):
            self.phase = text.split()[1]
        self.lines.append((t, self.phase, text))

    def parsed(self, prefix, phase=None):
        """[(t, name, fields)] of lines starting with prefix (e.g. "@@MARK")."""
        out = []
        for t, ph, text in self.lines:
            if text.startswith(prefix + " ") and (phase is None or ph == phase):
                rest = text[len(prefix) + 1:]
                name, _, tail = rest.partition(" ")
                out.append((t, name, scenario.fields(tail)))
        return out

    def mark(self, name, phase=None):
        for t, n, f in self.parsed("@@MARK", phase):
            if n == name:
                return t, f
        return None, {}

    def mem(self, label, phase=None):
        for t, n, f in self.parsed("@@MEM", phase):
            if n == label:
                return t, {k: int(v) for k, v in f.items() if v.isdigit()}
        return None, {}

    def events(self, name=None, phase=None):
        out = []
        for t, ph, text in self.lines:
            if " event=" in text and (phase is None or ph == phase):
                f = scenario.fields(text)
                if name is None or f.get("event") == name:
                    out.append((t, f))
        return out

    def sample_at(self, t):
        """The sample nearest to host time t."""
        return min(self.samples, key=lambda s: abs(s.t - t)) if self.samples else None

    def guest_s_at(self, t):
        """The guest's clock (seconds since its boot) at host time t, interpolated between the
        @@MARK lines around it (their t_ms): the host's clock plus an offset, but under QEMU's
        instruction clock (--icount) the guest's runs at its own pace."""
        m = [(ht, int(f["t_ms"]) / 1000) for ht, _, f in self.parsed("@@MARK")
             if f.get("t_ms", "").isdigit() and f["t_ms"] != "0"]  # rebuild_set says t_ms=0
        for (ha, ga), (hb, gb) in zip(m, m[1:]):
            if ha <= t <= hb:
                return ga + (gb - ga) * (t - ha) / (hb - ha) if hb > ha else ga
        return None

    def qemu_cpu_at(self, t):
        """QEMU's CPU seconds at host time t, interpolated between the samples around it (None
        outside them): the guest's work as the host paid for it, which waiting for the host's
        CPUs does not lengthen as it lengthens wall time."""
        s = [x for x in self.samples if x.qemu_cpu_s >= 0]
        for a, b in zip(s, s[1:]):
            if a.t <= t <= b.t:
                return a.qemu_cpu_s + (b.qemu_cpu_s - a.qemu_cpu_s) * (t - a.t) / (b.t - a.t)
        return None

    def qemu_minflt_between(self, t0, t1):
        """QEMU's minor page faults between the samples nearest t0 and t1 (None if unsampled)."""
        a, b = self.sample_at(t0), self.sample_at(t1)
        return b.qemu_minflt - a.qemu_minflt if a and b and min(a.qemu_minflt, b.qemu_minflt) >= 0 else None

    def cache_offset_kib(self):
        """The balloon's page-cache figure (NR_FILE_PAGES) also counts the initramfs (rootfs
        pages, never on the LRU) and shmem: its excess over the guest's own
        Active(file)+Inactive(file), taken where the guest had been quiet for seconds (after
        the 2 s settle at boot, at the ends of idle stretches; median). Constant over a boot."""
        diffs = []
        for t, name, f in self.parsed("@@MEM"):
            if name == "boot" or name.endswith("long_end") or name.endswith("short_end"):
                # the guest was quiet for seconds before these lines: take the sample before
                quiet = [s for s in self.samples if t - 1.5 <= s.t <= t and s.guest_cache_kib >= 0]
                if quiet and "file_kib" in f:
                    diffs.append(quiet[-1].guest_cache_kib - int(f["file_kib"]))
        return statistics.median(diffs) if diffs else 0

    def sample_within(self, t, t_end):
        """The sample nearest to t, if t is inside the sampled span and before t_end."""
        if not self.samples or t > t_end or t > self.samples[-1].t + 1:
            return None
        return self.sample_at(t)


def save_raw(out, boot):
    """Everything a boot gave, so --report can redo figures, table and plot without rerunning."""
    os.makedirs(os.path.join(out, "raw"), exist_ok=True)
    r = boot.result
    with open(os.path.join(out, "raw", f"{boot.kernel}-{boot.config}.json"), "w") as fh:
        json.dump({"kernel": boot.kernel, "config": boot.config, "release": boot.release,
                   "result": list(r) if r else None, "lines": boot.lines,
                   "samples": [list(s) for s in boot.samples]}, fh)


def load_raw(path):
    with open(path) as fh:
        d = json.load(fh)
    b = Boot(d["kernel"], d["config"])
    b.release = d["release"]
    b.result = vmext.vm.Result(*d["result"]) if d["result"] else None
    b.lines = [tuple(x) for x in d["lines"]]
    b.samples = [hostmon.Sample(*x) for x in d["samples"]]
    return b

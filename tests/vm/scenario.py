"""Reads what a scenario VM prints: markers from guest/lib.sh and reclaimd's key=value log lines,
each stamped with its host arrival time, grouped by scenario. Also a small check collector.

The host clock is the one clock every line shares: reclaimd logs wall time inside the guest,
the shell helpers log uptime, but both arrive over the same serial port within milliseconds.
"""
import re
import time

FIELD = re.compile(r'(\w+)=("(?:[^"\\]|\\.)*"|\S+)')


def fields(text):
    out = {}
    for key, value in FIELD.findall(text):
        if value.startswith('"'):
            value = value[1:-1].replace('\\"', '"').replace("\\\\", "\\")
        out[key] = value
    return out


class Line:
    def __init__(self, t, text):
        self.t = t          # host monotonic seconds at arrival
        self.text = text
        self.kind = None    # "mark", "mem", "exit", "event", None
        self.name = None    # marker/mem/exit name or event name
        self.f = {}
        if text.startswith("@@MARK ") or text.startswith("@@MEM ") or text.startswith("@@EXIT "):
            head, _, rest = text[2:].partition(" ")
            self.kind = head.lower()
            self.name, _, rest = rest.partition(" ")
            self.f = fields(rest)
        elif " event=" in text:
            self.kind = "event"
            self.f = fields(text)
            self.name = self.f.get("event")


class Timeline:
    """Collects lines as they arrive (pass .add as vm.run's on_line)."""

    def __init__(self):
        self.scenarios = {}   # name -> [Line]
        self.current = None
        self.all = []

    def add(self, text):
        self.add_line(Line(time.monotonic(), text.rstrip("\r\n")))

    def add_line(self, line):
        """A line already stamped (tests feed made-up timelines through this)."""
        self.all.append(line)
        if line.text.startswith("@@SCENARIO "):
            self.current = line.text.split(" ", 1)[1].strip()
            self.scenarios[self.current] = []
        elif self.current is not None:
            self.scenarios[self.current].append(line)

    def of(self, scenario):
        return Scenario(scenario, self.scenarios.get(scenario, []))


class Scenario:
    def __init__(self, name, lines):
        self.name = name
        self.lines = lines

    def events(self, name=None):
        return [l for l in self.lines if l.kind == "event" and (name is None or l.name == name)]

    def first(self, name):
        found = self.events(name)
        return found[0] if found else None

    def mark(self, name):
        for l in self.lines:
            if l.kind == "mark" and l.name == name:
                return l
        return None

    def mem(self, label):
        """The machine's figures at `label` (lib.sh's mem; cgmem's lines carry a cgroup)."""
        for l in self.lines:
            if l.kind == "mem" and l.name == label and "cgroup" not in l.f:
                return l
        return None

    def cgroup_mib(self, label, cgroup):
        """A cgroup's file cache at `label` (lib.sh's cgmem), in MiB; None when not printed."""
        for l in self.lines:
            if l.kind == "mem" and l.name == label and l.f.get("cgroup") == cgroup:
                return int(l.f["file_kib"]) / 1024
        return None

    def exit(self):
        for l in self.lines:
            if l.kind == "exit":
                return l
        return None

    def mib(self, label, key="reclaimable_kib"):
        m = self.mem(label)
        return int(m.f[key]) / 1024 if m and key in m.f else None

    def series(self, prefix, since="start"):
        """[(seconds since the `since` mark, {field: int})] from the lines starting with `prefix`
        (e.g. "@@SAMPLE ", whose fields are integers, t_ms among them); [] without the mark."""
        start = self.mark(since)
        if start is None:
            return []
        t0 = int(start.f["t_ms"])
        out = []
        for l in self.lines:
            if l.text.startswith(prefix):
                f = {k: int(v) for k, v in fields(l.text).items()}
                out.append(((f["t_ms"] - t0) / 1000, f))
        return out


class Checks:
    """Collects pass/fail lines so one run reports every problem, then a verdict."""

    def __init__(self, title):
        self.title = title
        self.failed = []
        self.lines = []
        self.figures = []

    def check(self, ok, what):
        self.lines.append(("PASS" if ok else "FAIL") + ": " + what)
        if not ok:
            self.failed.append(what)
        return ok

    def figure(self, name, value):
        self.figures.append((name, value))

    def report(self):
        print(f"== {self.title}")
        for line in self.lines:
            print("  " + line)
        for name, value in self.figures:
            print(f"  figure: {name} = {value}")
        print(f"== {self.title}: {'FAILED' if self.failed else 'passed'}")
        return not self.failed

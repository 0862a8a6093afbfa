"""The guest's punctuality canary (guest/canary.c): its static binary, and the judgement of a
guest-side deadline net of the time the guest lost to a starved vCPU over the same window.

Under TCG the guest's clock follows the host's, but when the host does not run QEMU's vCPU
thread nothing in the guest runs: every timer fires late, the daemon's like any other. The
canary, a SCHED_FIFO task that sleeps 500 ms at a time, records each wake-up that came 5 ms or
more late; guest/init.sh prints those records after the test as
    @@CANARY # period_ms=500 late_ms=5 start_ms=<uptime ms>
    @@CANARY <wake_ms> <late_ms>
A stall that made the canary wake late_ms late occupied [wake_ms - late_ms, wake_ms]; the time
lost over a window is the total overlap of those stalls with it.

The canary samples the vCPU twice a second: a stall between two of its wake-ups, or the host
slicing the vCPU thread finely while the daemon works, it does not see. So the host also counts
the time QEMU's vCPU thread waited for a host CPU over the same window (vcpuwait.py: the
scheduler's own count, continuous). Both are lower bounds of what the host took from the guest
there; a deadline is met when the raw delay less the larger of them is within the limit: a
punctual daemon on a starved guest passes, a late daemon fails whether the guest was punctual
or crowded. Every judgement prints the raw delay and both figures.
"""
import datetime
import hashlib
import os
import subprocess
import threading

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.join(HERE, "guest", "canary.c")
GUEST_PATH = "/bin/vm-canary"


def binary(cache_dir):
    """Path of the static canary built from SOURCE (cached by the source's hash)."""
    with open(SOURCE, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()[:16]
    out = os.path.join(cache_dir, "canary", f"canary-{digest}")
    if not os.path.exists(out):
        os.makedirs(os.path.dirname(out), exist_ok=True)
        # The benchmarks boot in threads of one process: the thread in the name too.
        tmp = f"{out}.{os.getpid()}.{threading.get_ident()}.tmp"
        cc = os.environ.get("CC_FOR_GUEST", "cc")
        r = subprocess.run([cc, "-static", "-O2", "-s", "-Wall", "-Wextra", "-Werror", "-o", tmp, SOURCE],
                           capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError(f"cannot build the guest canary with {cc} -static "
                               f"(libc6-dev has libc.a): {r.stderr.strip()}")
        os.replace(tmp, out)
    return out


class Canary:
    """The canary's records from a run, and the host-to-guest clock offset that maps a window
    stamped in host arrival time onto the guest's uptime."""

    def __init__(self, stalls, started, offset, host=None, log_offset=None):
        self.stalls = stalls      # [(wake_ms, late_ms)] in guest uptime
        self.started = started    # the canary ran (its header line arrived)
        self.offset = offset      # host seconds - guest seconds, or None without a guest stamp
        self.host = host          # vcpuwait.VcpuWait of the run, or None: not sampled
        self.log_offset = log_offset  # host seconds - reclaimd's log time, or None

    @classmethod
    def of(cls, lines, host=None):
        """From scenario.Line objects (Timeline.all): @@CANARY records, and the offset as the
        smallest arrival-minus-uptime of the lines that carry a guest stamp (t_ms): a line
        arrives after it was written, never before. host: the run's vcpuwait.VcpuWait."""
        stalls, started, offset, log_offset = [], False, None, None
        for l in lines:
            logged = log_time(l.text) if l.kind == "event" else None
            if logged is not None:
                log_offset = l.t - logged if log_offset is None else min(log_offset, l.t - logged)
            if l.text.startswith("@@CANARY "):
                parts = l.text.split()
                if parts[1] == "#":
                    started = started or any(p.startswith("period_ms=") for p in parts)
                elif len(parts) == 3 and parts[1].isdigit() and parts[2].isdigit():
                    stalls.append((int(parts[1]), int(parts[2])))
            elif l.kind in ("mark", "mem", "exit") and str(l.f.get("t_ms", "")).isdigit() and l.f["t_ms"] != "0":
                d = l.t - int(l.f["t_ms"]) / 1000
                offset = d if offset is None else min(offset, d)
        return cls(stalls, started, offset, host, log_offset)

    def written(self, line):
        """When `line` was written in the guest, in host seconds: a mark's uptime stamp or a
        log line's time through the offsets (each its series' smallest arrival lag); None
        without a stamp. Between two lines this leaves out what the serial port and the host
        took to carry them."""
        if line.kind == "event" and self.log_offset is not None:
            logged = log_time(line.text)
            return None if logged is None else logged + self.log_offset
        t_ms = str(line.f.get("t_ms", ""))
        if line.kind in ("mark", "mem", "exit") and t_ms.isdigit() and self.offset is not None:
            return int(t_ms) / 1000 + self.offset
        return None

    def lost_guest(self, start_ms, end_ms):
        """(lost ms, late wake-ups, worst ms) over the guest-time window [start_ms, end_ms]."""
        lost, n, worst = 0, 0, 0
        for wake, late in self.stalls:
            overlap = min(wake, end_ms) - max(wake - late, start_ms)
            if overlap > 0:
                lost, n, worst = lost + overlap, n + 1, max(worst, late)
        return lost, n, worst

    def lost_host(self, start, end):
        """The same over a window in host arrival seconds; (0, 0, 0) without an offset."""
        if self.offset is None:
            return 0, 0, 0
        return self.lost_guest((start - self.offset) * 1000, (end - self.offset) * 1000)


    def host_waited(self, start, end):
        """(vCPU s, main loop s) the host kept QEMU waiting for a CPU over the host-time window
        [start, end], or None when not sampled there."""
        return self.host.waited(start, end) if self.host is not None else None


def log_time(text):
    """reclaimd's log time of a line ("2026-12-02T13:00:00.000000 info event=..."), in seconds,
    or None."""
    try:
        return datetime.datetime.fromisoformat(text.split(" ", 1)[0]).replace(
            tzinfo=datetime.timezone.utc).timestamp()
    except ValueError:
        return None


def judge(c, what, delay, limit, canary, window, guest_clock=False, progress=False):
    """c.check that `delay` (s) less the time the guest lost over `window` (host seconds, or
    guest ms with guest_clock) is at most `limit` (s): the larger of the canary's lost time and
    the host's count of the vCPU's wait; the raw figures go into the line.
    progress: the delay is a stretch of periodic work on a guest busy with other work (trimming
    to a bound while a workload runs), not one deadline: the vCPU's wait there is mostly the
    other work's and delays no timer of the daemon's, so only the canary's lost time is taken
    off (the host's count is printed)."""
    if not canary.started:
        return c.check(False, f"{what} ({delay:+.3f} s raw; limit {limit:g} s): the guest's canary "
                              f"records never arrived, so the guest's own lateness is unknown")
    lost_ms, n, worst = (canary.lost_guest if guest_clock else canary.lost_host)(*window)
    host = None
    if not guest_clock:
        host = canary.host_waited(*window)
    elif canary.offset is not None:
        host = canary.host_waited(window[0] / 1000 + canary.offset, window[1] / 1000 + canary.offset)
    vcpu = host[0] if host else 0.0
    if host:
        said = f"host: vCPU waited {host[0]:.3f} s, main loop {host[1]:.3f} s"
    else:
        said = "host: not sampled" if canary.host is None else "host: under two samples in the window"
    net = delay - max(lost_ms / 1000, 0.0 if progress else vcpu)
    if progress and host:
        said += " (not taken off: progress)"
    return c.check(net <= limit, f"{what} ({delay:+.3f} s raw; the guest lost {lost_ms / 1000:.3f} s over the "
                                 f"window, canary late {n} times, worst {worst} ms; {said}; net {net:+.3f} s; "
                                 f"limit {limit:g} s)")

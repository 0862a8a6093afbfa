"""Host-side memory sampling of a running QEMU VM, without waking anything in guest userspace.

Every `period` seconds a host thread records, stamped with time.monotonic() (the clock
scenario.Timeline stamps guest lines with):
  - rss_kib:       the QEMU process's VmRSS: what the host sees (the seed's vmmem figure);
  - ram_rss_kib:   the resident part of the guest-RAM mapping alone (from /proc/PID/smaps):
                   the same minus QEMU's own heap and TCG's translation cache;
  - host_busy_pct: the host's CPUs busy over the last period, qemu_cpu_s: QEMU's CPU time
                   (to tell contention on the host from the guest's own behaviour);
  - qemu_minflt:   QEMU's minor page faults so far: the host filling guest RAM, e.g. pages the
                   guest gave back through free page reporting and touches again;
  - guest_*_kib:   the guest's MemTotal, MemFree, MemAvailable and page cache (NR_FILE_PAGES,
                   shmem included) from virtio-balloon's statistics queue, read over QMP
                   (vmext.run(balloon_stats=True)). The guest kernel answers the balloon's
                   request from a work item: no process wakes, no /proc read, a fraction of a
                   millisecond of guest CPU a second. stats_age_s says how old they are.
Use: mon = HostMonitor(mem_mib); pass mon.attach as vmext.run's on_qemu_start; mon.stop();
mon.samples is a list of Sample.
"""
import json
import os
import socket
import time
from typing import NamedTuple

from sampler import ThreadSampler

FIELDS = ("t", "rss_kib", "ram_rss_kib", "guest_total_kib", "guest_free_kib",
          "guest_avail_kib", "guest_cache_kib", "stats_age_s", "host_busy_pct", "qemu_cpu_s")


class Sample(NamedTuple):
    t: float
    rss_kib: int
    ram_rss_kib: int
    guest_total_kib: int      # -1 until the balloon driver has answered
    guest_free_kib: int
    guest_avail_kib: int
    guest_cache_kib: int
    stats_age_s: float
    host_busy_pct: float = -1.0  # the host's CPUs busy over the last period (contention)
    qemu_cpu_s: float = -1.0     # QEMU's CPU time so far (utime+stime)
    qemu_minflt: int = -1        # QEMU's minor page faults so far


class Qmp:
    """A minimal QMP client (one command at a time, events skipped)."""

    def __init__(self, path, timeout=2.0):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(timeout)
        self.sock.connect(path)
        self.buf = b""
        self._read()  # greeting
        self.cmd("qmp_capabilities")

    def _read(self):
        while b"\n" not in self.buf:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionError("QMP closed")
            self.buf += chunk
        line, _, self.buf = self.buf.partition(b"\n")
        return json.loads(line)

    def cmd(self, name, **args):
        msg = {"execute": name}
        if args:
            msg["arguments"] = args
        self.sock.sendall(json.dumps(msg).encode() + b"\n")
        while True:
            reply = self._read()
            if "event" in reply:
                continue
            if "error" in reply:
                raise RuntimeError(f"QMP {name}: {reply['error'].get('desc')}")
            return reply.get("return")

    def close(self):
        self.sock.close()


def _status_kib(pid, key):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return -1


def _host_cpu():
    """(busy, total) jiffies of the host's aggregate cpu line."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    idle = v[3] + v[4]
    total = sum(v[:8])
    return total - idle, total


def _proc_cpu_s_minflt(pid):
    """(utime + stime in seconds, minor faults) of a process."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()  # fields[0] is the 3rd field, state
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK"), int(fields[7])


def _ram_rss_kib(pid, mem_kib):
    """Rss of the guest-RAM mapping: the anonymous VMA sized like the guest's memory."""
    best = -1
    size = rss = None
    with open(f"/proc/{pid}/smaps") as f:
        for line in f:
            if line.startswith("Size:"):
                size = int(line.split()[1])
            elif line.startswith("Rss:"):
                rss = int(line.split()[1])
                if mem_kib <= size <= mem_kib + 8192:  # QEMU aligns the block: a few MiB over
                    best = max(best, rss)
    return best


class HostMonitor(ThreadSampler):
    def __init__(self, mem_mib, period=1.0, balloon_path="/machine/peripheral/balloon0",
                 poll_s=1):
        super().__init__()
        self.mem_kib = mem_mib * 1024
        self.period = period
        self.balloon_path = balloon_path
        self.poll_s = poll_s
        self.samples = []
        self.errors = []

    def attach(self, pid, qmp_path=None):
        """vmext.run's on_qemu_start: (re)start sampling this QEMU process."""
        self.stop()
        self.samples = []
        self._start(pid, qmp_path)

    def _loop(self, pid, qmp_path):
        qmp = None
        next_t = time.monotonic()
        prev = _host_cpu()
        while not self._stop.is_set():
            t = time.monotonic()
            try:
                rss = _status_kib(pid, "VmRSS")
                ram = _ram_rss_kib(pid, self.mem_kib)
                qcpu, minflt = _proc_cpu_s_minflt(pid)
            except (OSError, ValueError, IndexError):
                break  # QEMU is gone
            cur = _host_cpu()
            busy = 100.0 * (cur[0] - prev[0]) / (cur[1] - prev[1]) if cur[1] > prev[1] else -1.0
            prev = cur
            stats = {}
            age = -1.0
            if qmp_path:
                try:
                    if qmp is None and os.path.exists(qmp_path):
                        qmp = Qmp(qmp_path)
                        qmp.cmd("qom-set", path=self.balloon_path,
                                property="guest-stats-polling-interval", value=self.poll_s)
                    if qmp is not None:
                        got = qmp.cmd("qom-get", path=self.balloon_path, property="guest-stats")
                        if got and got.get("last-update"):
                            stats = got.get("stats", {})
                            age = time.time() - got["last-update"]
                except (OSError, ConnectionError, RuntimeError, ValueError) as e:
                    if len(self.errors) < 20:
                        self.errors.append(f"{t:.1f}: {e}")
                    if qmp is not None:
                        qmp.close()
                    qmp = None

            def kib(key):
                v = stats.get(key, -1)
                return v // 1024 if v is not None and v >= 0 else -1

            self.samples.append(Sample(t, rss, ram, kib("stat-total-memory"),
                                       kib("stat-free-memory"), kib("stat-available-memory"),
                                       kib("stat-disk-caches"), round(age, 2),
                                       round(busy, 1), round(qcpu, 2), minflt))
            next_t += self.period
            self._stop.wait(max(0.0, next_t - time.monotonic()))
        if qmp is not None:
            qmp.close()

"""How long the host kept a QEMU guest's vCPU waiting for a CPU, seen from the host.

Under TCG the guest has no steal time: when the host's scheduler leaves QEMU's vCPU thread
runnable but not running, nothing in the guest runs and every guest deadline slips by as much.
The kernel counts that wait per thread (/proc/PID/task/TID/schedstat, second field: run_delay,
ns spent runnable on a run queue). A host thread samples it for the vCPU thread ("CPU 0/TCG",
named by QEMU's -name debug-threads=on) and for QEMU's main loop (the thread that fires the
guest's timers and carries its serial output) every PERIOD_S, stamped with time.monotonic(),
the clock scenario.Timeline stamps guest lines with.

The guest's canary (canary.py) sees the same starvation only where one of its wake-ups, every
500 ms, falls into it; this sees all of it, whenever the guest wanted to run. Over a window the
wait is counted between the first sample inside it and the last one: never more than the
guest waited there. A guest that was idle (the vCPU halted) waits for nothing and counts 0.
Use: w = VcpuWait(); vm.run(..., on_qemu_start=w.attach); w.stop(); canary.Canary.of(lines, w).
"""
import os
import time

from sampler import ThreadSampler

# 50 ms: a window of a second is counted to within a tenth of it; a sample reads two small
# /proc files (~0.1 ms of host CPU), 0.4 % of a core at this rate.
PERIOD_S = 0.05


def _run_delay_s(pid, tid):
    with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
        return int(f.read().split()[1]) / 1e9


def _vcpu_tids(pid):
    tids = []
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/comm") as f:
                if f.read().startswith("CPU "):
                    tids.append(tid)
        except OSError:
            continue
    return tids


class VcpuWait(ThreadSampler):
    def __init__(self, period=PERIOD_S):
        super().__init__()
        self.period = period
        self.samples = []  # (host monotonic s, vCPU threads' wait s, main loop's wait s)
        self.error = None  # why nothing was sampled, if so

    def attach(self, pid):
        """vm.run's on_qemu_start: (re)start sampling this QEMU process (a retried boot's too)."""
        self.stop()
        self.samples, self.error = [], None
        self._start(pid)

    def _loop(self, pid):
        vcpus, deadline = [], time.monotonic() + 10
        while not vcpus and not self._stop.is_set():  # QEMU names its threads as it creates them
            try:
                vcpus = _vcpu_tids(pid)
            except OSError:
                self.error = "QEMU ended before its vCPU thread was seen"
                return
            if not vcpus and time.monotonic() > deadline:
                self.error = "no vCPU thread named 'CPU n/...' (QEMU without -name debug-threads=on?)"
                return
            self._stop.wait(self.period)
        next_t = time.monotonic()
        while not self._stop.is_set():
            try:
                vcpu = sum(_run_delay_s(pid, t) for t in vcpus)
                main = _run_delay_s(pid, pid)
            except (OSError, ValueError, IndexError):
                return  # QEMU is gone
            self.samples.append((time.monotonic(), vcpu, main))
            next_t += self.period
            self._stop.wait(max(0.0, next_t - time.monotonic()))

    def waited(self, start, end):
        """(vCPU s, main loop s) of waiting for a host CPU within [start, end] (host monotonic
        s), counted between the first and the last sample inside it; None without two there."""
        inside = [s for s in self.samples if start <= s[0] <= end]
        if len(inside) < 2:
            return None
        return inside[-1][1] - inside[0][1], inside[-1][2] - inside[0][2]

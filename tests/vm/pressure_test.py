#!/usr/bin/env python3
"""On real kernels: pressure backoff in a 6.1, 6.12 or newest VM (guest/pressure.sh), run twice:
with backoff (pressure.enabled: true) and without (false), in one boot each.

A workload stalls on memory for 10 s (a task throttled by memory.high in work.slice/hog: about
1000 ms of stall a second, ten times the 100 ms trigger, on an idle host as on a loaded one)
while reclaimd reclaims work.slice.
First, in each run, the kernel's totals must show the pressure's onset (the first moment the
`some` total in work.slice grew by the 100 ms threshold within a window, from the guest's 100 ms
samples): without it the run proves nothing, and the test fails saying the workload made no
pressure. Then, with backoff: reclaim of work.slice halts within one window (1 s) of the onset;
no step while backed off; it resumes only after the 10 s calm period, with the step halved.
Without backoff: no backoff line. Reports the workload's stall, the onset-to-halt latency and
the steps taken under pressure (from the onset to the workload's end) with backoff and without.
Usage: pressure_test.py --kernel 6.12 --reclaimd build/controller/reclaimd
"""
import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import canary  # noqa: E402
import scenario  # noqa: E402
import vcpuwait  # noqa: E402
import vm  # noqa: E402

THRESHOLD_US = 100_000
WINDOW_S = 1.0
CALM_S = 10.0


def psi_samples(s):
    """[(host time, guest time s, total us)] from the guest's @@PSI lines."""
    out = []
    for l in s.lines:
        if l.text.startswith("@@PSI "):
            f = scenario.fields(l.text)
            out.append((l.t, int(f["t_ms"]) / 1000, int(f["total"])))
    return out


def onset(s):
    """Host time of the first @@PSI sample whose total grew >= threshold within the window."""
    samples = psi_samples(s)
    for i, (host_t, guest_t, total) in enumerate(samples):
        for _, g0, t0 in samples[:i]:
            if guest_t - g0 <= WINDOW_S and total - t0 >= THRESHOLD_US:
                return host_t, samples
    return None, samples


def run(kernel, reclaimd, pressure, log_dir):
    timeline, host = scenario.Timeline(), vcpuwait.VcpuWait()
    r = vm.run(os.path.join(HERE, "guest", "pressure.sh"), kernel=kernel,
               add=[(reclaimd, "/usr/bin/reclaimd"), (os.path.join(HERE, "guest", "lib.sh"), "/test/lib.sh")],
               data="3x100", env={"PRESSURE": pressure}, timeout=300,
               log_dir=os.path.join(log_dir, pressure), on_line=timeline.add, on_qemu_start=host.attach)
    host.stop()
    return r, timeline.of(f"pressure-{pressure}"), canary.Canary.of(timeline.all, host)


def stall_during(s):
    """(ms, s): stall work.slice's tasks suffered while the workload ran, from the kernel's
    totals, and the guest time it was measured over; (0, 0) without two samples."""
    samples = psi_samples(s)
    if len(samples) < 2:
        return 0.0, 0.0
    return (samples[-1][2] - samples[0][2]) / 1000, samples[-1][1] - samples[0][1]


def stall_figure(c, kernel, name, s):
    """The workload's stall rate against the trigger: backoff is only testable well above it."""
    ms, span = stall_during(s)
    if span > 0:
        rate = ms / span
        c.figure(f"{kernel} work.slice stall {name} backoff",
                 f"{ms:.0f} ms in {span:.1f} s = {rate:.0f} ms/s, "
                 f"{rate / (THRESHOLD_US / 1000):.1f}x the {THRESHOLD_US // 1000} ms trigger")


def made_pressure(c, name, s):
    """Checks, first, that the kernel's totals show the onset: the backoff assertions (or the
    absence of backoff without it) mean nothing if the workload did not stall. Returns the onset."""
    start, samples = onset(s)
    ms, _ = stall_during(s)
    c.check(start is not None, f"{name} backoff: " + (
        f"the kernel's totals show the pressure onset ({len(samples)} samples)" if start is not None
        else f"the workload made no pressure ({ms:.0f} ms, {len(samples)} samples)"))
    return start


def under_pressure(s, steps, start):
    """The steps taken between the pressure's onset and the workload's end."""
    end = s.mark("workload_end")
    return [e for e in steps if start is not None and end and start < e.t < end.t]


def while_backed_off(steps, halt, resume):
    """The steps whose write began between the halt and the resume, by reclaimd's own log times:
    a step is logged when its write returns, so one that began before the halt may be logged
    just after the backoff line; and the host reads the serial port in bursts (on a loaded host
    a resume line and a step 15 ms after it arrived together), so the arrival order of lines
    close in time says nothing. A step began at its log time less what it says it took."""
    times = [canary.log_time(e.text) for e in [halt, resume] + steps]
    if None in times:
        raise ValueError("a backoff, resume or reclaim_step line without reclaimd's time stamp")
    start, end = times[0], times[1]
    return [e for e, t in zip(steps, times[2:]) if start < t - float(e.f.get("took_ms", 0)) / 1000 < end]


def check_resume(c, kernel, steps, backoffs, resumes):
    """After the halt: no step until the resume, which comes after the calm period, and a halved step."""
    halt = backoffs[0]
    if not c.check(bool(resumes), f"reclaim resumed ({len(resumes)} resume lines)"):
        return
    during = while_backed_off(steps, halt, resumes[0])
    c.check(not during, f"no step while backed off ({len(during)})")
    c.check(resumes[0].t - halt.t >= CALM_S - 0.5,
            f"resumed only after the calm period ({resumes[0].t - halt.t:.1f} s after the halt)")
    after = [e for e in steps if e.t > resumes[-1].t]
    if c.check(bool(after), f"steps again after resuming ({len(after)})"):
        c.check(float(after[0].f.get("asked_mib", 99)) <= 8.0,
                f"the next step is halved ({after[0].f.get('asked_mib')} MiB of 16)")
    last_pressure = max(e.t for e in backoffs)
    c.figure(f"{kernel} backoff to resume", f"{resumes[0].t - halt.t:.1f} s (calm {CALM_S:.0f} s, "
             f"last pressure report {last_pressure - halt.t:.1f} s after the halt)")


def judge(c, kernel, on, off, late):
    """Every check on the two runs' timelines (no VM here: pressure_judge_test.py feeds it made-up ones);
    late: the backoff run's canary (canary.Canary), for the halt's deadline."""
    watch = [e for e in on.events("pressure_watch") if e.f.get("scope") == "machine"]
    c.check(bool(watch) and watch[0].f.get("mode") == "trigger",
            f"PSI trigger registered on the machine ({watch[0].f.get('mode') if watch else 'no line'})")
    steps = [e for e in on.events("reclaim_step") if e.f.get("cgroup") == "work.slice"]
    c.check(bool(steps), f"work.slice was being reclaimed ({len(steps)} steps)")
    stall_figure(c, kernel, "with", on)
    stall_figure(c, kernel, "without", off)
    start = made_pressure(c, "with", on)
    off_start = made_pressure(c, "without", off)
    if start is None:
        return
    backoffs = on.events("backoff")
    if not c.check(bool(backoffs), "reclaimd backed off"):
        return
    halt = backoffs[0]
    latency = halt.t - start
    c.figure(f"{kernel} onset (kernel totals) to halt (backoff logged)", f"{latency * 1000:+.0f} ms "
             f"(scope {halt.f.get('scope')}, source {halt.f.get('source')}, stall {halt.f.get('stall_ms')} ms)")
    canary.judge(c, "halted within one window of the onset", latency, WINDOW_S, late, (start, halt.t))
    check_resume(c, kernel, steps, backoffs, on.events("resume"))
    if off_start is not None:
        c.check(not off.events("backoff"), "without backoff: no backoff lines")
    off_steps = [e for e in off.events("reclaim_step") if e.f.get("cgroup") == "work.slice"]
    c.figure(f"{kernel} steps from the onset to the workload's end, with / without backoff",
             f"{len(under_pressure(on, steps, start))} / {len(under_pressure(off, off_steps, off_start))}")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--kernel", required=True, choices=vm.kernels.SERIES)
    p.add_argument("--reclaimd", required=True)
    p.add_argument("--log-dir")
    a = p.parse_args(argv)
    log_dir = a.log_dir or f"/tmp/reclaimd-vm-pressure-{a.kernel}"
    c = scenario.Checks(f"pressure on {a.kernel}")
    r_on, on, late = run(a.kernel, a.reclaimd, "true", log_dir)
    r_off, off, _ = run(a.kernel, a.reclaimd, "false", log_dir)
    c.check(r_on.code == 0 and r_off.code == 0,
            f"VMs ran the scenario (with backoff: {r_on.outcome}, without: {r_off.outcome}; logs in {log_dir})")
    judge(c, a.kernel, on, off, late)
    for run_s, name in ((on, "with"), (off, "without")):
        ex = run_s.exit()
        c.check(ex is not None and ex.f.get("code") == "0", f"{name} backoff: clean exit")
    return 0 if c.report() else 1


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""The pressure test's judgement (pressure_test.judge) on made-up timelines, without a VM: a run
whose workload made no pressure fails as such, before any backoff assertion; a good run passes.
Usage: pressure_judge_test.py (exit 0 = passed)
"""
import datetime
import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import canary  # noqa: E402
import pressure_test  # noqa: E402
import scenario  # noqa: E402

BASE = datetime.datetime(2026, 11, 30, 22, 10, 0, tzinfo=datetime.timezone.utc)


def log(t, guest=None):
    """reclaimd's line prefix stamped at guest time `guest` s (by default the host's `t`)."""
    stamp = BASE + datetime.timedelta(seconds=t if guest is None else guest)
    return stamp.strftime("%Y-%m-%dT%H:%M:%S.%f") + " info event="


def timeline(stall_ms_per_s=1000, backoff=True, steps_during=False, extra=()):
    """A run as the host sees it: host time t in s, the workload from 5 s to 15 s, @@PSI every
    100 ms (guest time = host time); with backoff: halt at 5.5 s, resume at 25.6 s, halved step.
    `extra`: more (host time, line) pairs."""
    lines = [(0.1, log(0.1) + "pressure_watch scope=machine mode=trigger")]
    lines += [(t, log(t) + "reclaim_step cgroup=work.slice asked_mib=16.0") for t in (1, 2, 3, 4)]
    lines.append((5.0, "@@MARK workload_start t_ms=5000"))
    for i in range(101):
        t = 5.0 + i / 10
        lines.append((t, f"@@PSI t_ms={round(t * 1000)} total={i * stall_ms_per_s * 100}"))
    if backoff:
        lines.append((5.5, log(5.5) + "backoff scope=machine source=trigger stall_ms=300"))
    if steps_during:
        lines += [(5.7 + i, log(5.7 + i) + "reclaim_step cgroup=work.slice asked_mib=16.0") for i in range(10)]
    lines.append((15.2, "@@MARK workload_end t_ms=15200"))
    if backoff:
        lines.append((25.6, log(25.6) + "resume scope=machine"))
    lines.append((26.0, log(26.0) + f"reclaim_step cgroup=work.slice asked_mib={8.0 if backoff else 16.0}"))
    lines += list(extra)
    lines.append((31.0, "@@EXIT pressure code=0"))
    return scenario.Scenario("pressure", [scenario.Line(t, text) for t, text in sorted(lines)])


def judged(on, off):
    c = scenario.Checks("pressure on test")
    pressure_test.judge(c, "test", on, off, canary.Canary([], True, 0.0))  # a punctual guest
    return c


class Judge(unittest.TestCase):
    def test_good_runs_pass(self):
        c = judged(timeline(), timeline(backoff=False, steps_during=True))
        self.assertEqual(c.failed, [])
        self.assertIn(("test steps from the onset to the workload's end, with / without backoff", "0 / 10"),
                      c.figures)

    def test_a_step_while_backed_off_fails(self):
        c = judged(timeline(extra=[(10.0, log(10.0) + "reclaim_step cgroup=work.slice asked_mib=16.0 took_ms=9.0")]),
                   timeline(backoff=False))
        self.assertEqual(c.failed, ["no step while backed off (1)"])

    def test_steps_are_judged_by_when_reclaimd_began_them_not_by_when_their_lines_arrived(self):
        # One that began 22 ms before the halt, logged just after it; one logged 15 ms after the
        # resume whose line arrived in the same burst as the resume's (the host's arrival times
        # put its start 8 ms before the resume).
        straddling = (5.51, log(5.51, guest=5.5007) + "reclaim_step cgroup=work.slice asked_mib=16.0 took_ms=22.4")
        burst = (25.6, log(25.6, guest=25.615) + "reclaim_step cgroup=work.slice asked_mib=8.0 took_ms=8.1")
        c = judged(timeline(extra=[straddling, burst]), timeline(backoff=False))
        self.assertEqual(c.failed, [])

    def test_no_pressure_fails_as_such_before_any_backoff_check(self):
        c = judged(timeline(stall_ms_per_s=0, backoff=False), timeline(backoff=False))
        self.assertEqual(c.failed, ["with backoff: the workload made no pressure (0 ms, 101 samples)"])
        self.assertFalse([l for l in c.lines if "backed off" in l], c.lines)

    def test_stall_below_the_trigger_is_no_pressure(self):
        c = judged(timeline(stall_ms_per_s=90, backoff=False), timeline(backoff=False))
        self.assertIn("with backoff: the workload made no pressure (900 ms, 101 samples)", c.failed)

    def test_pressure_without_backoff_fails(self):
        c = judged(timeline(backoff=False), timeline(backoff=False))
        self.assertEqual(c.failed, ["reclaimd backed off"])

    def test_the_baseline_run_must_make_pressure_too(self):
        c = judged(timeline(), timeline(stall_ms_per_s=0, backoff=False))
        self.assertEqual(c.failed, ["without backoff: the workload made no pressure (0 ms, 101 samples)"])
        self.assertFalse([l for l in c.lines if "no backoff lines" in l], c.lines)


if __name__ == "__main__":
    unittest.main()

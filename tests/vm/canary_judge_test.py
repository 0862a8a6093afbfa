#!/usr/bin/env python3
"""The deadline judgement net of the guest canary (canary.judge, through foundation_test's
gradual checks), without a VM: a late daemon on a punctual guest fails; a punctual daemon on a
guest the host starved passes; a stall outside the window excuses nothing.
Usage: canary_judge_test.py (exit 0 = passed)
"""
import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import canary  # noqa: E402
import foundation_test  # noqa: E402
import scenario  # noqa: E402

LOG = "2026-12-02T13:00:00.000000 info event="
GRACE = 30
OFFSET = 100.0  # host seconds at guest uptime 0


def gradual_run(start_delay, stalls, with_canary=True):
    """The gradual scenario as the host sees it: the fill ends at guest 10 s (host 110 s), idle
    begins start_delay s after the grace period's end; stalls: [(wake_ms, late_ms)] the
    canary recorded, printed after the test."""
    due = OFFSET + 10 + GRACE
    lines = [(OFFSET + 1, "@@SCENARIO gradual"),
             (OFFSET + 1.1, LOG + "mode effective=gradual format=swappiness=0"),
             (OFFSET + 10, "@@MARK fill_end t_ms=10000 burn_ms=500 counted_ms=500"),
             (OFFSET + 10.05, "@@MEM after_fill t_ms=10050 reclaimable_kib=307200"),
             (due - 4, f"@@MEM before_grace t_ms={round((due - 4 - OFFSET) * 1000)} reclaimable_kib=307200"),
             (due + start_delay, LOG + "idle_entered"),
             (due + start_delay + 0.1, LOG + "reclaim_step status=done"),
             (due + start_delay + 0.2, LOG + "compact"),
             (due + 20, f"@@MEM after_reclaim t_ms={round((due + 20 - OFFSET) * 1000)} reclaimable_kib=131072"),
             (due + 21, "@@EXIT gradual code=0")]
    if with_canary:
        lines.append((due + 22, "@@CANARY # period_ms=500 late_ms=5 start_ms=900"))
        lines += [(due + 22, f"@@CANARY {wake} {late} ") for wake, late in stalls]
    t = scenario.Timeline()
    for host_t, text in lines:
        t.add_line(scenario.Line(host_t, text))
    return t


def judged(start_delay, stalls, with_canary=True):
    t = gradual_run(start_delay, stalls, with_canary)
    c = scenario.Checks("t")
    foundation_test.check_gradual(c, t.of("gradual"), GRACE, "6.12", canary.Canary.of(t.all))
    return c


def starts(c):
    return [l for l in c.lines if "reclaim starts within 1 s" in l]


class Judge(unittest.TestCase):
    def test_punctual_daemon_on_punctual_guest_passes(self):
        c = judged(0.3, [])
        self.assertEqual(c.failed, [])

    def test_late_daemon_on_punctual_guest_fails(self):
        c = judged(1.8, [(20000, 6), (25000, 8)])  # small stalls, far from the window
        self.assertEqual(len(c.failed), 2, c.lines)  # the start and the first step
        self.assertIn("+1.800 s raw; the guest lost 0.000 s", starts(c)[0])

    def test_punctual_daemon_on_starved_guest_passes(self):
        # The vCPU did not run for 1.2 s from 0.2 s after the grace period's end (guest 40.2 s).
        c = judged(1.8, [(41400, 1200)])
        self.assertEqual(c.failed, [], c.lines)
        self.assertIn("+1.800 s raw; the guest lost 1.200 s over the window, canary late 1 times, "
                      "worst 1200 ms; net +0.600 s", starts(c)[0])

    def test_late_daemon_on_starved_guest_fails(self):
        c = judged(2.5, [(41400, 1200)])
        self.assertTrue(starts(c)[0].startswith("FAIL"), c.lines)

    def test_a_stall_before_the_window_excuses_nothing(self):
        c = judged(1.8, [(39500, 1200)])  # ended 0.5 s before the grace period's end
        self.assertTrue(starts(c)[0].startswith("FAIL"), c.lines)

    def test_only_the_overlap_counts(self):
        # Stalled from guest 39.5 s to 40.7 s: 0.7 s of it falls after the grace period's end.
        c = judged(1.8, [(40700, 1200)])
        self.assertIn("lost 0.700 s", starts(c)[0])
        self.assertTrue(starts(c)[0].startswith("FAIL"), c.lines)

    def test_no_canary_fails(self):
        c = judged(0.3, [], with_canary=False)
        self.assertTrue(starts(c)[0].startswith("FAIL"), c.lines)
        self.assertIn("canary records never arrived", starts(c)[0])

    def test_guest_clock_window(self):
        late = canary.Canary([(5000, 800), (9000, 300)], True, None)
        self.assertEqual(late.lost_guest(4500, 8000), (500, 1, 800))
        self.assertEqual(late.lost_guest(0, 10000), (1100, 2, 800))
        self.assertEqual(late.lost_host(0, 10), (0, 0, 0))  # no offset: nothing excused

    def test_offset_is_the_smallest_arrival_lag(self):
        lines = [scenario.Line(105.3, "@@MARK a t_ms=5000"), scenario.Line(107.1, "@@MARK b t_ms=7000"),
                 scenario.Line(200.0, "@@MARK done t_ms=0")]
        self.assertAlmostEqual(canary.Canary.of(lines).offset, 100.1)

    def test_malformed_records_are_ignored(self):
        lines = [scenario.Line(1.0, "@@CANARY # period_ms=500"), scenario.Line(1.0, "@@CANARY 12x 5"),
                 scenario.Line(1.0, "@@CANARY 1200 40")]
        self.assertEqual(canary.Canary.of(lines).stalls, [(1200, 40)])


if __name__ == "__main__":
    unittest.main()

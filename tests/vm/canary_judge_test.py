#!/usr/bin/env python3
"""The deadline judgement net of the guest's lateness (canary.judge, through foundation_test's
gradual checks), without a VM: a late daemon on a punctual guest fails, and on a crowded one; a
punctual daemon on a guest the host starved passes, whether its canary or the host's count of
the vCPU's wait (vcpuwait.py) saw the starvation; a stall outside the window excuses nothing.
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
import vcpuwait  # noqa: E402

GRACE = 30
OFFSET = 100.0  # host seconds at guest uptime 0
LOG_LAG = 0.01  # how long after reclaimd's log time a log line arrives on the host


def log(host_t, event, lag=LOG_LAG):
    """A reclaimd log line arriving at host_t, logged lag s earlier (guest wall time 13:00:00
    at host OFFSET)."""
    return (f"2026-12-02T13:{(host_t - lag - OFFSET) // 60:02.0f}:{(host_t - lag - OFFSET) % 60:09.6f}"
            f" info event={event}")


def gradual_run(start_delay, stalls, with_canary=True, idle_lag=LOG_LAG, blocked=0.0):
    """The gradual scenario as the host sees it: the fill ends at guest 10 s (host 110 s), idle
    begins start_delay s after the grace period's end (its line carried idle_lag s after it was
    logged; the guest's own work held it back `blocked` s); stalls: [(wake_ms, late_ms)] the
    canary recorded, printed after the test."""
    due = OFFSET + 10 + GRACE
    lines = [(OFFSET + 1, "@@SCENARIO gradual"),
             (OFFSET + 1.1, log(OFFSET + 1.1, "mode effective=gradual format=swappiness=0")),
             (OFFSET + 10, "@@MARK fill_end t_ms=10000 burn_ms=500 counted_ms=500"),
             (OFFSET + 10.05, "@@MEM after_fill t_ms=10050 reclaimable_kib=307200"),
             (due - 4, f"@@MEM before_grace t_ms={round((due - 4 - OFFSET) * 1000)} reclaimable_kib=307200"),
             (due + start_delay, log(due + start_delay, f"idle_entered blocked_s={blocked:.3f}", idle_lag)),
             (due + start_delay + 0.1, log(due + start_delay + 0.1, "reclaim_step status=done")),
             (due + start_delay + 0.2, log(due + start_delay + 0.2, "compact")),
             (due + 20, f"@@MEM after_reclaim t_ms={round((due + 20 - OFFSET) * 1000)} reclaimable_kib=131072"),
             (due + 21, "@@EXIT gradual code=0")]
    if with_canary:
        lines.append((due + 22, "@@CANARY # period_ms=500 late_ms=5 start_ms=900"))
        lines += [(due + 22, f"@@CANARY {wake} {late} ") for wake, late in stalls]
    t = scenario.Timeline()
    for host_t, text in lines:
        t.add_line(scenario.Line(host_t, text))
    return t


def host_wait(spans, step=vcpuwait.PERIOD_S):
    """A VcpuWait sampled every `step` s over the run (host 100-165 s), its vCPU waiting for a
    CPU `rate` s a second within each (start, end, rate) span (host seconds), its main loop half
    as much."""
    w = vcpuwait.VcpuWait()
    waited, t = 0.0, OFFSET
    while t <= OFFSET + 65:
        w.samples.append((t, waited, waited / 2))
        waited += step * sum(rate for start, end, rate in spans if start <= t < end)
        t = round(t + step, 6)
    return w


def judged(start_delay, stalls, with_canary=True, host=None, idle_lag=LOG_LAG, blocked=0.0):
    t = gradual_run(start_delay, stalls, with_canary, idle_lag, blocked)
    c = scenario.Checks("t")
    foundation_test.check_gradual(c, t.of("gradual"), GRACE, "6.12", canary.Canary.of(t.all, host))
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

    def test_daemon_held_back_by_the_guests_own_work_passes(self):
        # The guest's interval was over the threshold for 1.5 s after the grace: not lateness.
        c = judged(1.8, [], blocked=1.5)
        self.assertEqual(c.failed, [], c.lines)
        self.assertIn("+0.300 s raw", starts(c)[0])

    def test_held_back_less_than_it_was_late_fails(self):
        c = judged(3.0, [], blocked=1.5)  # the start 1.5 s late net of it, the step 1.6
        self.assertEqual(len(c.failed), 2, c.lines)

    def test_an_idle_entered_without_blocked_s_fails(self):
        c = judged(0.3, [], blocked=float("nan"))
        self.assertEqual(len(c.failed), 1, c.lines)

    def test_punctual_daemon_on_starved_guest_passes(self):
        # The vCPU did not run for 1.2 s from 0.2 s after the grace period's end (guest 40.2 s).
        c = judged(1.8, [(41400, 1200)])
        self.assertEqual(c.failed, [], c.lines)
        self.assertIn("+1.800 s raw; the guest lost 1.200 s over the window, canary late 1 times, "
                      "worst 1200 ms; host: not sampled; net +0.600 s", starts(c)[0])

    def test_late_daemon_on_starved_guest_fails(self):
        c = judged(2.5, [(41400, 1200)])
        self.assertTrue(starts(c)[0].startswith("FAIL"), c.lines)

    def test_late_daemon_on_crowded_guest_fails(self):
        # The host kept the vCPU waiting 30 % of the time around the grace's end (0.54 s of the
        # 1.8 s window), the canary saw two of those waits; the daemon was 1.26 s late beyond.
        c = judged(1.8, [(40600, 84), (41100, 36)], host=host_wait([(OFFSET + 35, OFFSET + 45, 0.3)]))
        self.assertTrue(starts(c)[0].startswith("FAIL"), c.lines)
        self.assertIn("+1.800 s raw; the guest lost 0.120 s over the window, canary late 2 times, worst 84 ms; "
                      "host: vCPU waited 0.540 s, main loop 0.270 s; net +1.260 s", starts(c)[0])

    def test_punctual_daemon_on_a_guest_starved_between_canary_wakes_passes(self):
        # The vCPU waited 1 s for a CPU in all, in stretches the canary's two wake-ups a second
        # missed but for 60 ms: the host's count excuses it.
        c = judged(1.8, [(40500, 60)], host=host_wait([(OFFSET + 40, OFFSET + 42, 0.5)]))
        self.assertEqual(c.failed, [], c.lines)
        self.assertIn("lost 0.060 s", starts(c)[0])
        self.assertIn("host: vCPU waited 0.900 s", starts(c)[0])
        self.assertIn("net +0.900 s", starts(c)[0])

    def test_host_wait_before_the_window_excuses_nothing(self):
        c = judged(1.8, [], host=host_wait([(OFFSET + 30, OFFSET + 40, 0.9)]))
        self.assertTrue(starts(c)[0].startswith("FAIL"), c.lines)
        self.assertIn("host: vCPU waited 0.000 s", starts(c)[0])

    def test_host_wait_is_counted_between_samples_inside_the_window(self):
        w = vcpuwait.VcpuWait()
        w.samples = [(10.0, 1.0, 0.1), (10.5, 1.2, 0.1), (11.0, 1.5, 0.2), (11.5, 2.0, 0.2)]
        self.assertEqual(w.waited(10.2, 11.6), (0.8, 0.1))  # 10.5 to 11.5: never more than waited
        self.assertIsNone(w.waited(10.6, 10.9))  # no two samples inside: unknown, nothing excused
        late = canary.Canary([], True, 9.0, w)  # guest ms 1500-2500 is host 10.5-11.5
        self.assertEqual(late.host_waited(10.5, 11.5), (0.8, 0.1))

    def test_a_guest_clock_window_is_mapped_onto_the_host_samples(self):
        t = scenario.Timeline()
        for host_t, text in [(OFFSET + 1, "@@SCENARIO sigterm"), (OFFSET + 1, "@@MARK sigterm t_ms=1000"),
                             (OFFSET + 3, "@@CANARY # period_ms=500 late_ms=5 start_ms=900")]:
            t.add_line(scenario.Line(host_t, text))
        late = canary.Canary.of(t.all, host_wait([(OFFSET + 1, OFFSET + 3, 0.5)]))
        c = scenario.Checks("t")
        canary.judge(c, "exit", 1.4, 1.0, late, (1000, 2400), guest_clock=True)
        self.assertEqual(c.failed, [], c.lines)
        self.assertIn("host: vCPU waited 0.700 s", c.lines[0])

    def test_the_guests_stamps_tell_the_lines_carriage_from_the_daemons_time(self):
        # idle_entered was logged 0.3 s after the grace's end and carried 0.5 s: +0.8 s raw. By
        # the stamps +0.31 s: the log lines' quickest carriage (10 ms) is taken as none, as the
        # marks' (0 ms here) is.
        c = judged(0.8, [], idle_lag=0.5)
        figures = dict(c.figures)
        self.assertEqual(figures.get("6.12 gradual: reclaim start after grace end, by the guest's stamps"),
                         "+0.310 s", c.figures)
        self.assertEqual(figures.get("6.12 gradual: reclaim start after grace end (idle_entered)"), "+0.800 s")

    def test_progress_over_a_busy_guest_takes_off_only_the_canarys_time(self):
        late = canary.Canary([(2000, 300)], True, OFFSET, host_wait([(OFFSET, OFFSET + 60, 0.4)]))
        c = scenario.Checks("t")
        canary.judge(c, "bound", 50.0, 45.0, late, (0, 50000), guest_clock=True, progress=True)
        self.assertTrue(c.lines[0].startswith("FAIL"), c.lines)
        self.assertIn("host: vCPU waited 20.000 s, main loop 10.000 s (not taken off: progress); net +49.700 s",
                      c.lines[0])

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

#!/usr/bin/env python3
"""The machine-wide test's early-start allowance (foundation_test.early_allowance), without a VM:
it follows the guest's own count of the burn the work ends with.
Usage: foundation_allowance_test.py (exit 0 = passed)
"""
import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import foundation_test  # noqa: E402
import scenario  # noqa: E402


def fill_end(burn_ms, counted_ms):
    return scenario.Line(0.0, f"@@MARK fill_end t_ms=9000 burn_ms={burn_ms} counted_ms={counted_ms}")


class Allowance(unittest.TestCase):
    def test_every_tick_counted_allows_grace_times_threshold(self):
        self.assertAlmostEqual(foundation_test.early_allowance(30, fill_end(500, 500)), 0.15 + 0.05)

    def test_a_burn_counted_at_half_allows_twice_as_much(self):
        self.assertAlmostEqual(foundation_test.early_allowance(30, fill_end(500, 250)), 0.30 + 0.05)

    def test_a_burn_counted_within_the_budget_bounds_nothing(self):
        self.assertIsNone(foundation_test.early_allowance(30, fill_end(500, 150)))

    def test_no_count_bounds_nothing(self):
        self.assertIsNone(foundation_test.early_allowance(30, scenario.Line(0.0, "@@MARK fill_end t_ms=9000")))

    def test_an_early_start_beyond_the_allowance_fails(self):
        c = scenario.Checks("t")
        foundation_test.check_early(c, "gradual", -0.40, 30, fill_end(500, 300))
        self.assertEqual(len(c.failed), 1)
        foundation_test.check_early(c, "gradual", -0.25, 30, fill_end(500, 300))
        self.assertEqual(len(c.failed), 1, c.lines)


if __name__ == "__main__":
    unittest.main()

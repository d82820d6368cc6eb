"""benchmarks/record.py flags a number more than 10% worse than its
baseline, in the direction each measure is better."""
import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "benchmarks"))
import record  # noqa: E402  pylint: disable=wrong-import-position


class RecordTest(unittest.TestCase):

    def test_flags_only_what_got_worse_by_more_than_the_tolerance(self):
        baseline = {
            "adstack_recurrence: fwd+rev ms (lanes)": 10.0,             # lower is better
            "adstack_recurrence: speedup of lanes over scalar": 20.0,   # higher is better
            "host_copies: worst copy / numpy.copy": 0.8,
        }
        numbers = {
            "adstack_recurrence: fwd+rev ms (lanes)": 11.5,             # 15% slower
            "adstack_recurrence: speedup of lanes over scalar": 19.0,   # 5% worse
            "host_copies: worst copy / numpy.copy": 1.2,                # better
            "launch_overhead: worst kernel launch us": 3.0,            # no baseline
        }
        rows, flags = record.compare("cpu", numbers, baseline)
        self.assertEqual(flags, 1)
        by_key = {row[0]: row for row in rows}
        self.assertEqual(by_key["adstack_recurrence: fwd+rev ms (lanes)"][4], "FLAG")
        self.assertEqual(by_key["adstack_recurrence: speedup of lanes over scalar"][4], "")
        self.assertAlmostEqual(by_key["host_copies: worst copy / numpy.copy"][3], -0.5)
        self.assertEqual(by_key["launch_overhead: worst kernel launch us"][4], "new")

    def test_every_baseline_entry_names_a_measure(self):
        import json  # pylint: disable=import-outside-toplevel
        with open(record.BASELINE) as f:
            recorded = json.load(f)
        self.assertIn("cpu", recorded)
        for kind, numbers in recorded.items():
            for key in numbers:
                self.assertIn(record.direction(kind, key), ("lower", "higher"), key)


if __name__ == "__main__":
    unittest.main()

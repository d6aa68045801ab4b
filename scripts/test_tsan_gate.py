#!/usr/bin/env python3
"""The ThreadSanitizer gate against its planted race: run through scripts/tsan_gate.sh, the planted
test (tests/tsan/planted_race.cpp, two threads writing one int) must fail the gate with a data
race report naming PlantedWrite; the gate's run of the suites must leave it out, and the tree must
hold it exactly once. Run by scripts/test.sh --sanitize before the suites, on a built build/tsan;
it fails, and CI with it, the day ThreadSanitizer stops catching the race."""
import os
import subprocess
import sys
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GATE = os.path.join(ROOT, "scripts", "tsan_gate.sh")


def listed(*select):
    """The names of the tests the gate would run (ctest -N through it), given `select`."""
    r = subprocess.run(["bash", GATE, *select, "-N"],
                       capture_output=True, text=True, check=True)
    return [line.split(":", 1)[1].strip() for line in r.stdout.splitlines()
            if line.strip().startswith("Test") and "#" in line]


class TsanGate(unittest.TestCase):
    def test_the_planted_race_fails_the_gate(self):
        r = subprocess.run(["bash", GATE, "--planted"],
                           capture_output=True, text=True)
        out = r.stdout + r.stderr
        self.assertNotEqual(r.returncode, 0, "the gate passed the planted race:\n" + out)
        self.assertIn("WARNING: ThreadSanitizer: data race", out, out)
        self.assertIn("PlantedWrite", out, out)
        self.assertIn("tsan_gate: ThreadSanitizer reported", out, out)

    def test_the_tree_holds_the_planted_race_once(self):
        self.assertEqual(listed("--planted"), ["tsan_planted_race"])

    def test_the_suites_leave_it_out(self):
        suites = listed()
        self.assertNotIn("tsan_planted_race", suites)
        self.assertIn("dipc-0", suites)


if __name__ == "__main__":
    unittest.main(verbosity=1)

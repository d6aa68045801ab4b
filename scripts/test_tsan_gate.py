#!/usr/bin/env python3
"""The ThreadSanitizer gate against its planted race: run through scripts/tsan_gate.sh, the planted
test (tests/tsan/planted_race.cpp, two threads writing one int) must fail the gate with a data
race report naming PlantedWrite; the gate's run of the suites must leave it out, and the tree must
hold it exactly once. The report filter (scripts/tsan_reports.py) is checked on written reports:
a race with ferry's code on either side counts, one of third-party code on both sides does not.
Run by scripts/test.sh --sanitize before the suites, on a built build/tsan; it fails, and CI with
it, the day ThreadSanitizer stops catching the race."""
import os
import subprocess
import sys
import tempfile
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


def report(first, second, top="memcpy"):
    """A data race report whose accesses are made in `first` and `second` (a function, its file
    and its module), each under a runtime frame `top`."""
    def stack(caller):
        fun, where, module = caller
        return (f"    #0 {top} <null> (ferry_x_tests+0x10)\n"
                f"    #1 {fun} {where} ({module}+0x20)\n")
    return ("==================\nWARNING: ThreadSanitizer: data race (pid=1)\n"
            "  Write of size 8 at 0x7b0400000010 by thread T2:\n" + stack(first) +
            "\n  Previous read of size 8 at 0x7b0400000010 by main thread:\n" + stack(second) +
            "\nSUMMARY: ThreadSanitizer: data race\n==================\n")


FERRY = ("ferry::dipc::internal::Session::Failed(std::string const&)", "src/dipc/session.cpp:1:2",
         "ferry_x_tests")
GRPC = ("grpc::internal::CallbackWithSuccessTag::Clear()", "/usr/include/grpcpp/x.h:1:2",
        "ferry_x_tests")
UCX = ("ucs_socket_recv_nb", "<null>", "libucs.so.0")


class ReportFilter(unittest.TestCase):
    def counts(self, text):
        with tempfile.NamedTemporaryFile("w", suffix=".tsan") as f:
            f.write(text)
            f.flush()
            r = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "tsan_reports.py"),
                                os.path.join(ROOT, "scripts", "tsan.supp"), f.name],
                               capture_output=True, text=True)
        return r.returncode != 0

    def test_a_race_of_ferrys_code_counts(self):
        self.assertTrue(self.counts(report(FERRY, FERRY)))

    def test_ferry_against_third_party_code_counts(self):
        self.assertTrue(self.counts(report(FERRY, GRPC)))
        self.assertTrue(self.counts(report(UCX, FERRY)))

    def test_third_party_code_on_both_sides_does_not(self):
        self.assertFalse(self.counts(report(GRPC, GRPC)))
        self.assertFalse(self.counts(report(UCX, UCX)))

    def test_ferry_freeing_what_third_party_code_read_does_not(self):
        freed = report(FERRY, GRPC, top="operator delete(void*)")
        self.assertFalse(self.counts(freed))

    def test_an_unsymbolised_frame_of_the_program_counts(self):
        self.assertTrue(self.counts(report(("<null>", "<null>", "ferry_x_tests"), GRPC)))

    def test_any_other_report_counts(self):
        self.assertTrue(self.counts("==1==ERROR: ThreadSanitizer: SEGV on unknown address\n"))


if __name__ == "__main__":
    unittest.main(verbosity=1)

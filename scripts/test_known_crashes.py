"""Checks pytest_suite (scripts/known_crashes.sh) on planted suites run by pytest-xdist: a test whose
worker aborts after printing UCX 1.13's async assertion runs once more and the suite passes; a
worker that aborts without it, an ordinary failure beside the known crash, or a test that crashes
in the known bug again on its second run each fail the suite.
Usage: .venv/bin/python scripts/test_known_crashes.py (scripts/test.sh runs it)."""
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
# What UCX 1.13 prints before it aborts (ucs_fatal_error_message), as a crashed worker leaves it.
ASSERTION = "[host:1:2]        async.c:556  Assertion `handler->async == async' failed"
# A test that aborts its worker the first time it runs (a marker file remembers), writing `line` to
# file descriptor 2 as UCX does; the suites run with --capture=sys, which leaves that descriptor be.
CRASH_ONCE = """import os
def test_crash_once():
    marker = os.path.join(os.environ["PLANT_DIR"], "crashed")
    if not os.path.exists(marker):
        open(marker, "w").close()
        os.write(2, ({line!r} + "\\n").encode())
        os.abort()
"""
CRASH_ALWAYS = """import os
def test_crash_always():
    os.write(2, ({line!r} + "\\n").encode())
    os.abort()
"""
PASSING = "def test_ok():\n    pass\n"
FAILING = "def test_bad():\n    assert False\n"
CASES = {
    # name: (files, the suite's wanted exit status, a line the output must hold)
    "known crash, then a pass": ({"test_a.py": CRASH_ONCE.format(line=ASSERTION), "test_b.py": PASSING},
                                 0, "running them once more"),
    "another crash": ({"test_a.py": CRASH_ONCE.format(line="Fatal: something else")}, 1, "crashed"),
    "a failure beside the crash": ({"test_a.py": CRASH_ONCE.format(line=ASSERTION), "test_b.py": FAILING},
                                   1, "test_bad"),
    "the known crash twice": ({"test_a.py": CRASH_ALWAYS.format(line=ASSERTION)}, 1, "running them once more"),
    "a plain pass": ({"test_b.py": PASSING}, 0, "1 passed"),
}


def main():
    for name, (files, want_rc, want_line) in CASES.items():
        with tempfile.TemporaryDirectory() as d:
            for file, source in files.items():
                with open(os.path.join(d, file), "w") as f:
                    f.write(source)
            script = (f"source {os.path.join(HERE, 'known_crashes.sh')}; "
                      f"pytest_suite {sys.executable} -m pytest -q --capture=sys -n 2 {d}")
            r = subprocess.run(["bash", "-c", script], capture_output=True, text=True, cwd=d,
                               env=dict(os.environ, PLANT_DIR=d))
            out = r.stdout + r.stderr
            if r.returncode != want_rc or want_line not in out:
                print(f"test_known_crashes: {name}: exit status {r.returncode} (wanted {want_rc}), "
                      f"{want_line!r} {'present' if want_line in out else 'missing'}\n{out}")
                return 1
            print(f"test_known_crashes: {name}: exit status {r.returncode}, as wanted")
    return 0


if __name__ == "__main__":
    sys.exit(main())

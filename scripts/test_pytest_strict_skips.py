"""Checks scripts/pytest_strict_skips.py on planted suites: a skip naming missing hardware passes,
a missing peer library (importorskip) or any other skip fails the run, and the count is printed.
Usage: .venv/bin/python scripts/test_pytest_strict_skips.py (scripts/test.sh runs it)."""
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
CASES = {
    "hardware": ('import pytest\ndef test_gpu():\n    pytest.skip("no CUDA GPU on this machine")\n'
                 "def test_ok():\n    pass\n", 0, "1 skipped, 1 for missing hardware, 0 for anything else"),
    "peer": ('import pytest\ndef test_peer():\n    pytest.importorskip("ferry_no_such_peer")\n', 1,
             "1 skipped, 0 for missing hardware, 1 for anything else"),
    "module": ('import pytest\npytest.importorskip("ferry_no_such_peer")\ndef test_x():\n    pass\n', 1,
               "1 skipped, 0 for missing hardware, 1 for anything else"),
    "clean": ("def test_ok():\n    pass\n", 0, "0 skipped"),
    "failing": ("def test_bad():\n    assert False\n", 1, "0 skipped"),
}


def main():
    for name, (source, want_rc, want_line) in CASES.items():
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, f"test_{name}.py")
            with open(path, "w") as f:
                f.write(source)
            env = dict(os.environ, PYTHONPATH=HERE)
            r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "pytest_strict_skips",
                                "-p", "no:cacheprovider", path], capture_output=True, text=True, env=env, cwd=d)
            assert r.returncode == want_rc, (name, r.returncode, r.stdout)
            assert f"strict skips: {want_line}" in r.stdout, (name, r.stdout)
    print(f"test_pytest_strict_skips: {len(CASES)} planted suites judged as expected")


if __name__ == "__main__":
    main()

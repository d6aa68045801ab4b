"""`ferry demo` end to end: every step ends in the one summary table, each serve -> get path
moves at least the requested MiB after a warm-up whose batches compared equal value by value,
start-up is reported apart, child processes are silent unless --verbose, and what the demo says
about devices agrees with `ferry devices`."""
import json
import re

import pytest

ROW = re.compile(r"^(?P<step>.{46}) +(?P<data>-|[\d.]+ MiB) +(?P<startup>-|server \d+ ms, get \d+ ms) +"
                 r"(?P<time>-|[\d.]+ s) +(?P<rate>-|[\d.]+ GB/s)  (?P<result>.*)$")
PATHS = ["shared memory, type 1", "Unix socket, type 0", "UCX, type 1", "UCX, type 0"]


def summary(stdout):
    lines = stdout.splitlines()
    start = lines.index("summary:")
    assert lines[start + 1].split()[:2] == ["step", "data"]
    rows = []
    for line in lines[start + 2:]:
        m = ROW.match(line)
        assert m, line
        rows.append({k: v.strip() for k, v in m.groupdict().items()})
    return rows


@pytest.fixture(scope="module")
def quiet(run):
    return run("demo", "--rows", "3000", "--transfer-mib", "8", timeout=300)


def test_ends_with_one_summary_table_of_every_step(quiet):
    assert quiet.returncode == 0, quiet.stderr
    assert quiet.stdout.count("summary:") == 1
    rows = summary(quiet.stdout)  # the table runs to the end of the output
    steps = [r["step"] for r in rows]
    assert steps[:3] == ["build the table (3000 rows)", "import through the C data interface", "full validation"]
    assert any("OPENCL:0" in s for s in steps) and any("guarded" in s for s in steps)
    assert [p for p in PATHS if any(p in s for s in steps)] == PATHS


def test_each_path_moves_the_requested_mib_after_a_checked_warm_up(quiet):
    for r in summary(quiet.stdout):
        if not r["step"].startswith("serve -> get"):
            continue
        if r["result"].startswith("skipped"):
            assert "UCX" in r["step"] and "no UCX" in r["result"]
            continue
        assert r["result"] == "identical, value by value"
        assert float(r["data"].split()[0]) >= 8
        assert r["startup"].startswith("server ") and float(r["time"].split()[0]) > 0
        assert float(r["rate"].split()[0]) > 0


def test_children_are_silent_unless_verbose(run, quiet):
    assert quiet.stderr == ""
    loud = run("demo", "--rows", "500", "--transfer-mib", "1", "--verbose", timeout=300)
    assert loud.returncode == 0, loud.stderr
    assert "ferry demo: running ferry serve --transport shm --body-type list check=" in loud.stderr
    assert "ferry demo: running ferry get " in loud.stderr
    assert "ferry serve:" in loud.stderr  # the server's own log reaches the terminal


def test_device_rows_agree_with_ferry_devices(run, quiet):
    doc = json.loads(run("devices", "--json").stdout)
    rows = {r["step"]: r for r in summary(quiet.stdout)}
    cuda = rows["CPU -> CUDA:0 -> CPU"]
    if "cuda" in doc["absent"]:
        assert cuda["result"] == "skipped: " + doc["absent"]["cuda"]
    else:
        assert cuda["result"].startswith("identical")
    opencl = rows["CPU -> OPENCL:0 -> CPU"]
    usable = [d for d in doc["devices"] if d["kind"] == "opencl" and d["svm"]]
    assert opencl["result"].startswith("identical") == bool(usable)
    assert rows["CPU -> guarded (EXT_DEV:0) -> CPU"]["result"].startswith("identical")


def test_rows_must_be_positive(run):
    r = run("demo", "--rows", "0")
    assert r.returncode != 0 and "--rows" in r.stderr

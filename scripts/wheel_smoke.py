"""The installed wheel as a user meets it (scripts/test_without_apt.sh runs it in a fresh virtual
environment, with the project's apt libraries hidden): argv[1] is the repository, argv[2] the UCX
version libucx must give (the one pip installed).
- ferry and its `ferry` command both run on PyPI's libucx, at that version;
- `ferry serve` and `ferry get` move an Arrow file between two processes over shared memory and
  UCX with both body types, equal to pyarrow's read;
- a pyarrow.flight client reads the same file from `ferry serve --flight`;
- `ferry demo` runs, at a small size."""
import json
import os
import shutil
import subprocess
import sys
import tempfile

import pyarrow as pa
import pyarrow.flight as flight
import pyarrow.ipc as ipc

import ferry

repo, want_ucx = sys.argv[1], sys.argv[2]
sys.path.insert(0, os.path.join(repo, "tests", "support"))
from ferry_process import ServeProcess  # noqa: E402

site = os.path.dirname(os.path.dirname(os.path.abspath(ferry.__file__)))
libucx = os.path.join(site, "libucx", "lib")
cli = shutil.which("ferry")
assert cli and os.path.dirname(cli) == os.path.dirname(sys.executable), (cli, sys.executable)


def check_ucx(report, who):
    assert report["available"] and report["loaded"] == want_ucx, (who, report)
    assert os.path.realpath(report["path"]).startswith(os.path.realpath(libucx) + os.sep), (who, report)


check_ucx(ferry.dipc.loaded_ucx(), "the extension")
devices = json.loads(subprocess.run([cli, "devices", "--json"], check=True, capture_output=True,
                                    text=True, timeout=60).stdout)
check_ucx(devices["ucx"], "the ferry command")
print(f"wheel smoke: the extension and the command run on libucx {want_ucx} ({libucx})")

table = pa.table({"i": pa.array(range(50_000), pa.int64()),
                  "s": pa.array([None if i % 7 == 0 else f"row {i}" for i in range(50_000)]),
                  "l": pa.array([[i, i + 1] for i in range(50_000)], pa.list_(pa.int32()))})
with tempfile.TemporaryDirectory() as tmp:
    src = os.path.join(tmp, "t.arrows")
    with ipc.new_stream(src, table.schema) as w:
        w.write_table(table, max_chunksize=10_000)
    for transport in ("shm", "ucx"):
        for body in ("list", "packed"):
            with ServeProcess(["--transport", transport, "--body-type", body, f"t={src}"], cli=cli,
                              tmp=tmp) as server:
                name, uri = server.first_line().split()[:2]  # "NAME URI"
                assert name == "t", name
                out = os.path.join(tmp, f"{transport}-{body}.arrows")
                got = subprocess.run([cli, "get", uri, "--ticket", "t", "--to", out,
                                      "--no-progress"], capture_output=True, text=True, timeout=120)
                assert got.returncode == 0, f"ferry get exited {got.returncode}: {got.stderr}"
            assert ipc.open_stream(out).read_all().equals(table), (transport, body)
            print(f"wheel smoke: ferry serve -> ferry get over {transport}, {body} bodies: equal")
    with ServeProcess(["--flight", "127.0.0.1:0", f"t={src}"], cli=cli, tmp=tmp) as server:
        client = flight.connect(server.first_line())
        info = client.get_flight_info(flight.FlightDescriptor.for_path("t"))
        got = pa.concat_tables([client.do_get(e.ticket).read_all() for e in info.endpoints])
        assert got.equals(table)
    print("wheel smoke: pyarrow.flight read ferry serve --flight: equal")
demo = subprocess.run([cli, "demo", "--rows", "2000", "--transfer-mib", "8"], timeout=300,
                      capture_output=True, text=True)
# The demo reports a failing row in its table (stdout): shown whole when it fails.
assert demo.returncode == 0, f"ferry demo exited {demo.returncode}:\n{demo.stdout}\n{demo.stderr}"
print("wheel smoke: ferry demo ran")

"""What the ferry-tools package runs the server with (tools/service/), checked from the build tree
(scripts/test_deb.sh checks the installed package as root): systemd's own verifier accepts the
unit and rates its hardening, and the shipped /etc/ferry/ferry.toml, with its example dataset,
checks and serves what pyarrow reads from the file."""
import os
import pathlib
import shutil
import subprocess

import pyarrow.flight as flight
import pyarrow.ipc as ipc

from cli_support import REPO
from ferry_process import ServeProcess

SERVICE = pathlib.Path(REPO) / "tools" / "service"


def example(ferry_cli):
    # The build tree writes it beside the tool's directory (tools/service/CMakeLists.txt).
    path = pathlib.Path(ferry_cli).resolve().parents[1] / "service" / "example.arrows"
    assert path.exists(), f"{path}: build the ferry_example_data target"
    return path


def test_the_unit_passes_systemd_analyze(ferry_cli, tmp_path):
    assert shutil.which("systemd-analyze"), "systemd-analyze is missing (scripts/setup.sh installs systemd)"
    text = (SERVICE / "ferry.service").read_text()
    assert "ExecStart=/usr/bin/ferry serve --config /etc/ferry/ferry.toml\n" in text
    for setting in ("Type=notify", "WatchdogSec=", "User=ferry", "NoNewPrivileges=yes",
                    "ProtectSystem=strict", "PrivateTmp=yes", "ReadWritePaths=/var/lib/ferry"):
        assert f"\n{setting}" in text, setting
    # The verifier checks that ExecStart's program exists: here, the built tool.
    unit = tmp_path / "ferry.service"
    unit.write_text(text.replace("/usr/bin/ferry", ferry_cli))
    r = subprocess.run(["systemd-analyze", "verify", str(unit)], capture_output=True, text=True,
                       timeout=60)
    # It warns (and still exits 0) on an unknown key or a bad value: it must say nothing.
    assert r.returncode == 0 and r.stdout + r.stderr == "", r.stdout + r.stderr
    bad = tmp_path / "bad.service"
    bad.write_text(unit.read_text().replace("NoNewPrivileges=", "NoNewPrivilege="))
    r = subprocess.run(["systemd-analyze", "verify", str(bad)], capture_output=True, text=True,
                       timeout=60)
    assert "Unknown key 'NoNewPrivilege'" in r.stderr
    r = subprocess.run(["systemd-analyze", "security", "--offline=true", "--threshold=40",
                        str(unit)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stdout[-300:]


def test_the_shipped_configuration_serves_the_example(run, ferry_cli, tmp_path):
    data = example(ferry_cli)
    text = (SERVICE / "ferry.toml").read_text()
    assert 'example = "/usr/share/ferry/example.arrows"' in text
    config = tmp_path / "ferry.toml"
    config.write_text(text.replace("/usr/share/ferry/example.arrows", str(data)))
    r = run("serve", "--check-config", config)
    assert r.returncode == 0, r.stderr
    assert 'listen = "127.0.0.1:8815"' in text
    # Port 0 instead of 8815, which another program may hold: the flag overrides the key.
    with ServeProcess(["--config", config, "--flight", "127.0.0.1:0"], tmp=str(tmp_path),
                      cwd=os.sep) as server:
        client = flight.connect(server.first_line())
        info = client.get_flight_info(flight.FlightDescriptor.for_path("example"))
        assert [loc.uri.decode().split(":")[0] for loc in info.endpoints[0].locations] == [
            "shm", "ucx", "arrow-flight-reuse-connection"]
        got = client.do_get(info.endpoints[0].ticket).read_all()
        client.close()
    want = ipc.open_stream(str(data)).read_all()
    assert got.equals(want) and want.num_rows == 6

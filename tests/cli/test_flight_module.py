"""The ferry tool loads gRPC only for its Flight commands: every other command starts without
libferry_flight.so and gRPC's libraries (the dynamic loader's own log, LD_DEBUG=libs, is the
oracle), the Flight commands load its Flight module, and a missing or broken module is a clear
error with exit status 2, never a crash."""
import os
import shutil
import subprocess

import pyarrow as pa

from cli_support import REPO, write_ipc

GRPC_LIBRARIES = ("libferry_flight.so", "libgrpc++.so", "libprotobuf.so", "ferry_cli_flight.so")


def loaded_libraries(run, *args):
    """The shared objects the dynamic loader initialised for `ferry ARGS`, and the process."""
    r = run(*args, env={"LD_DEBUG": "libs", "LD_DEBUG_OUTPUT": None})
    inits = [line.split("calling init:")[1].strip() for line in r.stderr.splitlines()
             if "calling init:" in line]
    assert inits, r.stderr[-2000:]
    return [os.path.basename(path) for path in inits], r


def test_commands_without_flight_do_not_load_grpc(run, tmp_path):
    path = write_ipc(tmp_path / "t.arrows", pa.table({"a": [1, 2, 3]}))
    for args in (["inspect", path], ["validate", path], ["devices"],
                 ["get", "shm:///ferry-no-such-socket?want_data=1"]):
        libraries, _ = loaded_libraries(run, *args)
        assert "libferry.so.0" in libraries, libraries
        loaded = [name for name in libraries if name.startswith(GRPC_LIBRARIES)]
        assert loaded == [], (args, loaded)


def test_flight_commands_load_the_module(run):
    libraries, r = loaded_libraries(run, "list", "grpc://127.0.0.1:1", "--timeout", "0.5")
    assert r.returncode == 2
    assert "ferry_cli_flight.so" in libraries, libraries
    assert any(name.startswith("libgrpc++.so") for name in libraries), libraries
    assert "ferry: list: ListFlights on grpc://127.0.0.1:1: UNAVAILABLE" in r.stderr


def copy_tool(ferry_cli, directory):
    """The tool alone in `directory` (its run path still finds libferry.so in the build tree)."""
    directory.mkdir()
    tool = directory / "ferry"
    shutil.copy2(ferry_cli, tool)
    return str(tool)


def test_missing_module_is_a_clear_error(ferry_cli, tmp_path, run):
    tool = copy_tool(ferry_cli, tmp_path / "bin")
    for args in (["list", "grpc://127.0.0.1:1"], ["get", "grpc://127.0.0.1:1", "--path", "t"],
                 ["serve", "--flight", "127.0.0.1:0"]):
        r = subprocess.run([tool, *args], capture_output=True, text=True, timeout=60)
        assert r.returncode == 2, (args, r.stderr)
        assert "Arrow Flight is not available: cannot load ferry's Flight module" in r.stderr
        assert str(tmp_path / "bin" / "ferry_cli_flight.so") + ": not there" in r.stderr
    # Commands without Flight still work from the same copy.
    r = subprocess.run([tool, "--version"], capture_output=True, text=True, timeout=60)
    with open(os.path.join(REPO, "VERSION")) as f:
        assert (r.returncode, r.stdout) == (0, f"ferry {f.read().strip()}\n")


def test_broken_module_is_a_clear_error(ferry_cli, tmp_path):
    tool = copy_tool(ferry_cli, tmp_path / "bin")
    (tmp_path / "bin" / "ferry_cli_flight.so").write_bytes(b"not a shared object\n" * 10)
    r = subprocess.run([tool, "list", "grpc://127.0.0.1:1"], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 2, r.stderr
    assert "cannot load ferry's Flight module" in r.stderr
    assert "ferry_cli_flight.so" in r.stderr and "ELF" in r.stderr, r.stderr

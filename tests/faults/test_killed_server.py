"""A server killed in the middle of a parallel read of a flight spread over two servers (`ferry
serve --flight --peer`), read on each endpoint's fastest plane or as one column over UCX (type-1
gets in flight): ferry's client fails within the bound with one line naming the endpoint,
where it was reading from (the plane, the location, the server) and the cause, and leaves no
output file; the other server is left idle, with its descriptors and segments back, and serving.
The same read through ferry.dask on a real Dask cluster fails its task as fast, Dask's retry
included, with an error naming the server.
The dying server stops itself at its third body (FERRY_FAULT_PAUSE) and is then killed, so the
fault lands mid-read every time.
"""

import contextlib
import os
import signal
import subprocess
import time

import pyarrow as pa
import pyarrow.flight as fl
import pyarrow.ipc as ipc
import pytest

from fault_harness import (PAUSED, FlightServe, Log, fault_batch, fd_count, ferry_cli, idle_cpu,
                           segment_maps)

BOUND = 1.0  # a killed peer is found at once: its sockets are reset by the kernel
SLACK = 0.5


@pytest.fixture(scope="module")
def halves(tmp_path_factory):
    d = tmp_path_factory.mktemp("halves")
    batch = fault_batch(100_000)
    paths = []
    for name in ("a.arrows", "b.arrows"):
        paths.append(d / name)
        with ipc.new_stream(str(paths[-1]), batch.schema) as w:
            for _ in range(8):
                w.write_batch(batch)
    return paths, pa.Table.from_batches([batch] * 8)


@contextlib.contextmanager
def two_servers(tmp_path, halves):
    """The dying server (flight t's first half, stopping itself at its third body) and the
    survivor (t's second half, listing the dying one as its peer, and flight u); both are killed
    on the way out."""
    (a_path, b_path), _ = halves
    dying = FlightServe(tmp_path, [f"t={a_path}"], pause="server:body:3")
    survivor = None
    try:
        survivor = FlightServe(tmp_path, ["--peer", dying.uri, "--allow-partial", f"t={b_path}",
                                          f"u={b_path}"])
        yield dying, survivor
    finally:
        dying.kill()
        if survivor is not None:
            survivor.kill()


# How the client reads: each endpoint on its fastest plane (shared memory here), or one column
# over UCX, where the projected read is lent buffer lists and has gets in flight when the server
# dies.
READS = {"fastest": [], "ucx-projected": ["--via", "ucx", "--columns", "i"]}


@pytest.mark.parametrize("read", sorted(READS))
def test_a_server_killed_mid_read_fails_the_read_naming_it(tmp_path, halves, read):
    half = halves[1]
    scheme = "ucx://" if read == "ucx-projected" else "shm://"
    with two_servers(tmp_path, halves) as (dying, survivor):
        info = fl.connect(survivor.uri).get_flight_info(fl.FlightDescriptor.for_path("t"))
        assert len(info.endpoints) == 2
        dying_location = next(l.uri.decode() for l in info.endpoints[1].locations
                              if l.uri.decode().startswith(scheme))
        # A first read of the survivor's own flight, for its baseline of descriptors and segments.
        warm = subprocess.run([ferry_cli(), "get", survivor.uri, "--path", "u", "--no-progress",
                               "--to", str(tmp_path / "warm.arrows")],
                              capture_output=True, text=True, timeout=60)
        assert warm.returncode == 0, warm.stderr
        time.sleep(0.3)
        fds, segments = fd_count(survivor.proc.pid), segment_maps(survivor.proc.pid)

        out = tmp_path / "got.arrows"
        err = Log(str(tmp_path / "get.err"))
        client = subprocess.Popen(
            [ferry_cli(), "get", survivor.uri, "--path", "t", "--parallel", "2", "--timeout", "2",
             "--no-progress", "--to", str(out), *READS[read]],
            stdout=subprocess.DEVNULL, stderr=err.file)
        try:
            paused, _ = dying.log.wait_for(PAUSED, 30)
            assert paused, "the dying server never reached its third body: " + dying.log.text()
            t0 = time.monotonic()
            os.kill(dying.proc.pid, signal.SIGKILL)
            rc = client.wait(timeout=BOUND + 10)
            took = time.monotonic() - t0
        finally:
            if client.poll() is None:
                client.kill()
                client.wait()
        message = err.text().strip()
        assert rc == 2, message
        assert took <= BOUND + SLACK, f"the client took {took:.2f} s: {message}"
        assert len(message.splitlines()) == 1, message
        assert "endpoint 1 of 2" in message, message
        assert f"from {dying_location} (server 127.0.0.1)" in message, message
        assert not out.exists(), "a failed get left its output file"

        # The survivor let go of that client and serves the next one.
        deadline = time.monotonic() + 3
        while time.monotonic() < deadline and (fd_count(survivor.proc.pid) > fds or
                                               segment_maps(survivor.proc.pid) > segments):
            time.sleep(0.05)
        assert fd_count(survivor.proc.pid) <= fds, "the survivor keeps descriptors"
        assert segment_maps(survivor.proc.pid) <= segments, "the survivor keeps segments"
        assert idle_cpu(survivor.proc.pid) < 0.01, "the survivor does not fall idle"
        again = subprocess.run([ferry_cli(), "get", survivor.uri, "--path", "u", "--no-progress",
                                "--to", str(tmp_path / "again.arrows")],
                               capture_output=True, text=True, timeout=60)
        assert again.returncode == 0, again.stderr
        assert ipc.open_stream(str(tmp_path / "again.arrows")).read_all().equals(half)


def test_a_server_killed_mid_read_fails_the_dask_task_naming_it(tmp_path, halves):
    """ferry.dask.read_flight on a real cluster (a scheduler and a worker process): the task
    reading the killed server's endpoint fails within the bound, plus Dask's own retry (one here,
    which finds the server gone at once); the error names the location and its server, and the
    other server is left idle and serving."""
    distributed = pytest.importorskip("distributed", reason="scripts/setup.sh installs distributed")
    import ferry.dask as fdask

    half = halves[1]
    with two_servers(tmp_path, halves) as (dying, survivor):
        with distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=True,
                                      dashboard_address=":0", host="127.0.0.1") as cluster, \
                distributed.Client(cluster) as dask_client:
            df = fdask.read_flight(survivor.uri, "t")
            assert df.npartitions == 2
            info = fl.connect(survivor.uri).get_flight_info(fl.FlightDescriptor.for_path("t"))
            dying_shm = next(l.uri.decode() for l in info.endpoints[1].locations
                             if l.uri.decode().startswith("shm://"))
            future = dask_client.compute(df.i.sum(), retries=1)
            paused, _ = dying.log.wait_for(PAUSED, 60)
            assert paused, "the dying server never reached its third body: " + dying.log.text()
            t0 = time.monotonic()
            os.kill(dying.proc.pid, signal.SIGKILL)
            with pytest.raises(Exception) as failed:
                future.result(timeout=BOUND + 10)
            took = time.monotonic() - t0
            assert future.status == "error"
        message = str(failed.value)
        # The retry found the server gone: every location refused, each named, and the server.
        assert "(server 127.0.0.1)" in message and dying_shm in message, message
        assert took <= BOUND + SLACK, f"the task failed after {took:.2f} s: {message}"

        assert idle_cpu(survivor.proc.pid) < 0.01, "the survivor does not fall idle"
        again = fl.connect(survivor.uri).do_get(
            fl.connect(survivor.uri).get_flight_info(
                fl.FlightDescriptor.for_path("u")).endpoints[0].ticket).read_all()
        assert again.equals(half)

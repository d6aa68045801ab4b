"""SIGHUP re-reads `ferry serve --config`'s [datasets]: datasets are added and removed on the
running server without ending a client's connection; one removed while pyarrow.flight reads it
is read to the end, equal to what pyarrow wrote; a bad file changes nothing and is counted in
the stats action. The Dissociated IPC server (no --flight) reloads too, read by `ferry get`."""
import json
import signal
import time

import pyarrow as pa
import pyarrow.flight as flight
import pytest

from cli_support import write_ipc
from ferry_process import ServeProcess


def wait_for(predicate, what, timeout=30):
    """Poll `predicate` (a server's log or stats) until it holds; fails naming `what` after
    `timeout` s."""
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"no {what} within {timeout} s"
        time.sleep(0.01)


def stats(client):
    return json.loads(next(iter(client.do_action("stats"))).body.to_pybytes())


def names(client):
    return sorted(f.descriptor.path[0].decode() for f in client.list_flights())


@pytest.fixture(scope="module")
def big():
    # 64 MB: far more than gRPC's flow control lets the server send before the client reads.
    return pa.table({"x": pa.array(range(8_000_000), pa.int64())})


def test_sighup_adds_and_removes_datasets_and_refuses_a_bad_file(tmp_path, big):
    small = pa.table({"y": pa.array(["a", "b", None])})
    write_ipc(tmp_path / "big.arrows", big, chunk=500_000)
    write_ipc(tmp_path / "small.arrows", small)
    config = tmp_path / "ferry.toml"
    head = '[flight]\nlisten = "127.0.0.1:0"\n[planes]\ntransport = "grpc"\n[datasets]\n'
    config.write_text(head + 'big = "big.arrows"\n')
    with ServeProcess(["--config", config], tmp=str(tmp_path)) as server:
        client = flight.connect(server.first_line())
        assert names(client) == ["big"]
        assert stats(client)["config"] == {"reloads": 0, "reload_failures": 0}
        # A reader mid-stream: it has its first batch, the server has most still to send.
        info = client.get_flight_info(flight.FlightDescriptor.for_path("big"))
        reader = client.do_get(info.endpoints[0].ticket)
        first = reader.read_chunk().data
        assert first.num_rows == 500_000

        # Add one, remove the one being read.
        config.write_text(head + 'small = "small.arrows"\n')
        server.proc.send_signal(signal.SIGHUP)
        wait_for(lambda: stats(client)["config"]["reloads"] == 1, "reload")
        assert "reloaded " + str(config) + ": added small, removed big" in server.stderr()
        assert names(client) == ["small"]
        with pytest.raises(pa.ArrowKeyError, match='no flight named "big"'):
            client.get_flight_info(flight.FlightDescriptor.for_path("big"))
        assert client.do_get(
            client.get_flight_info(flight.FlightDescriptor.for_path("small")).endpoints[0].ticket
        ).read_all().equals(small)
        # The reader that held "big" reads it to the end.
        rest = reader.read_all()
        assert pa.concat_tables([pa.Table.from_batches([first]), rest]).equals(big)

        # A bad file (a key misspelt; a dataset whose file is gone) changes nothing: counted,
        # logged with its line and column.
        for text, where in [(head + 'small = "small.arrows"\n[log]\nverbos = true\n', ":8:1: "),
                            (head + 'big = "gone.arrows"\n', ":6:7: ")]:
            config.write_text(text)
            before = stats(client)["config"]["reload_failures"]
            server.proc.send_signal(signal.SIGHUP)
            wait_for(lambda: stats(client)["config"]["reload_failures"] == before + 1,
                     "refused reload")
            assert f"{config} refused, still serving as before: {config}{where}" in server.stderr()
            assert names(client) == ["small"]
        # A dataset that does not load (not an IPC file) is refused whole too: the datasets
        # added before it in the same reload are taken back.
        (tmp_path / "junk.arrows").write_bytes(b"not arrow" * 100)
        config.write_text(head + 'a = "big.arrows"\nsmall = "small.arrows"\nz = "junk.arrows"\n')
        server.proc.send_signal(signal.SIGHUP)
        wait_for(lambda: stats(client)["config"]["reload_failures"] == 3, "refused reload")
        assert names(client) == ["small"]
        assert stats(client)["config"] == {"reloads": 1, "reload_failures": 3}
        # A sound file again: served, on the same connection.
        config.write_text(head + 'big = "big.arrows"\nsmall = "small.arrows"\n')
        server.proc.send_signal(signal.SIGHUP)
        wait_for(lambda: stats(client)["config"]["reloads"] == 2, "reload")
        assert names(client) == ["big", "small"]
        client.close()
        assert server.stop(signal.SIGTERM) == 0


def test_sighup_reloads_a_server_without_flight(run, tmp_path):
    t = pa.table({"x": pa.array(range(1000), pa.int64())})
    write_ipc(tmp_path / "t.arrows", t)
    config = tmp_path / "ferry.toml"
    config.write_text('[datasets]\na = "t.arrows"\n')
    with ServeProcess(["--config", config, f"c={tmp_path / 't.arrows'}"],
                      tmp=str(tmp_path)) as server:
        uris = dict(server.first_line().split() for _ in range(2))
        assert sorted(uris) == ["a", "c"]
        config.write_text('[datasets]\nb = "t.arrows"\n')
        server.proc.send_signal(signal.SIGHUP)
        wait_for(lambda: "SIGHUP:" in server.stderr(), "reload")
        assert f"reloaded {config}: added b, removed a" in server.stderr()
        added, uris["b"] = server.first_line().split()
        assert added == "b"
        # The file's new dataset, and the command line's, which reloads keep, are served; the
        # one the file no longer names is not.
        for name in "bc":
            out = tmp_path / f"{name}.arrows"
            r = run("get", uris[name], "--ticket", name, "--to", out, "--no-progress")
            assert r.returncode == 0, r.stderr
            assert pa.ipc.open_stream(str(out)).read_all().equals(t)
        r = run("get", uris["a"], "--ticket", "a", "--no-progress")
        assert r.returncode == 2 and "unknown ticket" in r.stderr, r.stderr

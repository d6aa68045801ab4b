"""Discovery to the fast path: a Flight client (pyarrow.flight, independent of ferry) asks
`ferry serve --flight` for FlightInfo, takes the ucx:// location and the ticket, and the
independent Dissociated IPC peer (tests/interop/dipc_peer, no code shared with src/) reads the
flight with them; the shm:// location is read with ferry's dipc client. Both equal pyarrow's read,
with and without --keep and for an upload, and with a token (issued tickets only)."""
import os

import pyarrow as pa
import pyarrow.flight as fl
import pytest

pytest.importorskip("ferry._ferry", reason="the ferry binding is not installed (pip install ./python)")
import ferry  # noqa: E402

from flight_support import Serve, mixed_table  # noqa: E402
from peer_harness import REFUSED, get, ucx_env  # noqa: E402


def _locations(info):
    endpoint = info.endpoints[0]
    uris = [loc.uri.decode() for loc in endpoint.locations]
    by_scheme = {u.split("://")[0]: u for u in uris}
    return endpoint.ticket.ticket.decode(), by_scheme


@pytest.mark.parametrize("keep", [False, True], ids=["shared-region", "kept"])
@pytest.mark.parametrize("tls", ["default", "tcp"])
def test_ucx_location_read_by_the_independent_peer(tmp_path, keep, tls):
    table = mixed_table(20000)
    path = tmp_path / "t.arrows"
    with pa.ipc.new_stream(str(path), table.schema) as w:
        w.write_table(table, max_chunksize=5000)
    env = ucx_env({"default": None, "tcp": "tcp,self"}[tls])
    auth = fl.FlightCallOptions(headers=[(b"authorization", b"Bearer s3cret")])
    args = [f"t={path}"] + (["--keep"] if keep else [])
    with Serve(*args, env=dict(env, FERRY_TOKEN="s3cret"), tmp=str(tmp_path)) as s:
        info = fl.connect(s.uri).get_flight_info(fl.FlightDescriptor.for_path("t"), options=auth)
        ticket, uris = _locations(info)
        out = tmp_path / "peer.arrows"
        p, report = get(str(tmp_path), [uris["ucx"]], out, ticket=ticket, env=env)
        assert p.returncode == 0, p.stderr + s.stderr()
        assert pa.ipc.open_stream(str(out)).read_all().equals(table)
        assert report["addresses_freed"] == report["addresses_received"] > 0
        # The dataset's name is no ticket when the server has a token.
        p, _ = get(str(tmp_path), [uris["ucx"]], tmp_path / "no.arrows", ticket="t", env=env)
        assert p.returncode == 2 and REFUSED in p.stderr
        # The shm location, with the same ticket, through ferry's client.
        stream = ferry.dipc.connect(uris["shm"], ticket)
        assert pa.table(stream).equals(table)


def test_an_upload_is_served_on_the_ucx_location(tmp_path):
    table = mixed_table(3000, seed=4)
    with Serve(tmp=str(tmp_path)) as s:
        client = fl.connect(s.uri)
        writer, _ = client.do_put(fl.FlightDescriptor.for_path("up"), table.schema)
        writer.write_table(table, max_chunksize=1000)
        writer.close()
        ticket, uris = _locations(client.get_flight_info(fl.FlightDescriptor.for_path("up")))
        out = tmp_path / "peer.arrows"
        p, _ = get(str(tmp_path), [uris["ucx"]], out, ticket=ticket)
        assert p.returncode == 0, p.stderr + s.stderr()
        assert pa.ipc.open_stream(str(out)).read_all().equals(table)

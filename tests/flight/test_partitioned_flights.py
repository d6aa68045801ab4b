"""Partitioned flights of `ferry serve --flight`, read by pyarrow.flight (Arrow C++'s client, an
independent implementation of Flight): a directory or a pattern served as one flight with one
endpoint per file in name order, --partition-bytes cutting a file into endpoints of whole batches
(the cuts computed here from pyarrow's own IPC body sizes), DoAction append-partition building a
flight from uploads, each endpoint's ticket and fast locations reading its own partition, tokens,
and drop. Every read is compared with pyarrow's read of the files."""
import json
import re
import subprocess

import pyarrow as pa
import pyarrow.flight as fl
import pytest

from flight_support import Serve, ferry_cli, mixed_table

ERRORS = (fl.FlightError, pa.ArrowException)


def _write(path, table, chunk=None):
    with pa.ipc.new_stream(str(path), table.schema) as w:
        w.write_table(table, max_chunksize=chunk)
    return str(path)


def _parts(tmp_path, names, rows=300):
    """One file per name under tmp_path/parts, each a slice of one mixed table."""
    table = mixed_table(rows * len(names))
    directory = tmp_path / "parts"
    directory.mkdir()
    files = {}
    for i, name in enumerate(names):
        files[name] = table.slice(i * rows, rows)
        _write(directory / name, files[name], chunk=100)
    return directory, files


def _info(client, name, options=None):
    return client.get_flight_info(fl.FlightDescriptor.for_path(name), options=options)


def _read(client, endpoint, options=None):
    return client.do_get(endpoint.ticket, options=options).read_all()


def test_a_directory_is_one_flight_with_an_endpoint_per_file_in_name_order(tmp_path):
    # Written out of name order, with a hidden file beside them that is not served.
    directory, files = _parts(tmp_path, ["part-2.arrows", "part-0.arrows", "part-1.arrows"])
    (directory / ".hidden").write_bytes(b"not arrow")
    with Serve(f"taxi={directory}", tmp=str(tmp_path)) as s:
        client = fl.connect(s.uri)
        assert [f.descriptor.path for f in client.list_flights()] == [[b"taxi"]]
        info = _info(client, "taxi")
        order = sorted(files)
        assert len(info.endpoints) == 3
        assert info.ordered
        assert info.total_records == sum(t.num_rows for t in files.values())
        assert info.schema.equals(files[order[0]].schema)
        assert len({e.ticket.ticket for e in info.endpoints}) == 3
        for endpoint, name in zip(info.endpoints, order):
            assert _read(client, endpoint).equals(files[name]), name
        assert "3 endpoints" in s.stderr()


def test_a_pattern_selects_files_in_name_order(tmp_path):
    directory, files = _parts(tmp_path, ["b.arrows", "a.arrows", "c.arrows", "skip.stream"])
    with Serve(f"p={directory}/*.arrows", tmp=str(tmp_path)) as s:
        client = fl.connect(s.uri)
        info = _info(client, "p")
        got = [_read(client, e) for e in info.endpoints]
        assert [t.equals(files[n]) for t, n in zip(got, ["a.arrows", "b.arrows", "c.arrows"])] == [True] * 3
        assert len(got) == 3


def _body_size(batch):
    return pa.ipc.read_message(batch.serialize()).body.size


def test_partition_bytes_cuts_a_file_into_endpoints_of_whole_batches(tmp_path):
    table = mixed_table(2000)
    path = _write(tmp_path / "big.arrows", table, chunk=100)
    batches = pa.ipc.open_stream(path).read_all().to_batches()
    limit = 3 * _body_size(batches[0]) + 10
    # The cuts, computed from pyarrow's body sizes: a new endpoint when the next batch would
    # take this one past the limit.
    expected, size = [[]], 0
    for b in batches:
        if expected[-1] and size + _body_size(b) > limit:
            expected.append([])
            size = 0
        expected[-1].append(b)
        size += _body_size(b)
    assert len(expected) > 3
    with Serve("--partition-bytes", limit, f"big={path}", tmp=str(tmp_path)) as s:
        client = fl.connect(s.uri)
        info = _info(client, "big")
        assert len(info.endpoints) == len(expected)
        assert info.total_records == table.num_rows
        for endpoint, want in zip(info.endpoints, expected):
            got = _read(client, endpoint)
            assert got.equals(pa.Table.from_batches(want))
            # Whole batches: the endpoint's batches are the file's, boundaries and all.
            assert [b.num_rows for b in got.to_batches()] == [b.num_rows for b in want]


def test_each_endpoint_reads_its_own_partition_on_every_location(tmp_path):
    import ferry
    directory, files = _parts(tmp_path, ["0.arrows", "1.arrows"])
    with Serve(f"t={directory}", tmp=str(tmp_path)) as s:
        info = _info(fl.connect(s.uri), "t")
        for endpoint, name in zip(info.endpoints, ["0.arrows", "1.arrows"]):
            ticket = endpoint.ticket.ticket.decode()
            for location in endpoint.locations:
                uri = location.uri.decode()
                if uri.startswith(("shm://", "ucx://")):
                    got = pa.table(ferry.dipc.connect(uri, ticket))
                    assert got.equals(files[name]), (uri, name)


def test_append_partition_builds_a_flight_from_uploads(tmp_path):
    table = mixed_table(900)
    pieces = [table.slice(0, 300), table.slice(300, 300), table.slice(600, 300)]
    with Serve(tmp=str(tmp_path)) as s:
        client = fl.connect(s.uri)
        for i, piece in enumerate(pieces):
            writer, _ = client.do_put(fl.FlightDescriptor.for_path(f"upload-{i}"), piece.schema)
            writer.write_table(piece, max_chunksize=100)
            writer.close()
            body = json.dumps({"flight": "t", "from": f"upload-{i}"}).encode()
            [result] = list(client.do_action(fl.Action("append-partition", body)))
            assert json.loads(result.body.to_pybytes()) == {"flight": "t", "partition": i}
        # The uploads became the flight's endpoints: nothing else is listed.
        assert [f.descriptor.path for f in client.list_flights()] == [[b"t"]]
        info = _info(client, "t")
        assert len(info.endpoints) == 3 and info.total_records == 900
        assert pa.concat_tables([_read(client, e) for e in info.endpoints]).equals(table)
        # A partition of another schema is refused, and its upload stays as it was.
        other = pa.table({"x": [1, 2, 3]})
        writer, _ = client.do_put(fl.FlightDescriptor.for_path("other"), other.schema)
        writer.write_table(other)
        writer.close()
        with pytest.raises(ERRORS, match="schema differs"):
            list(client.do_action(fl.Action("append-partition",
                                            json.dumps({"flight": "t", "from": "other"}).encode())))
        assert _read(client, _info(client, "other").endpoints[0]).equals(other)
        assert len(_info(client, "t").endpoints) == 3
        with pytest.raises(ERRORS, match='no flight named "nope"'):
            list(client.do_action(fl.Action("append-partition",
                                            json.dumps({"flight": "t", "from": "nope"}).encode())))
        with pytest.raises(ERRORS, match="body is JSON"):
            list(client.do_action(fl.Action("append-partition", b"t nope")))
        # DoPut into the flight, or onto one of its partitions' names, is refused.
        for name in ("t", "t/1"):
            writer, _ = client.do_put(fl.FlightDescriptor.for_path(name), other.schema)
            with pytest.raises(ERRORS, match="already served"):
                writer.write_table(other)
                writer.close()
        assert "append-partition" in [a.type for a in client.list_actions()]


def test_tokens_and_drop(tmp_path):
    directory, files = _parts(tmp_path, ["0.arrows", "1.arrows", "2.arrows"])
    with Serve(f"t={directory}", env={"FERRY_TOKEN": "s3cret"}, tmp=str(tmp_path)) as s:
        client = fl.connect(s.uri)
        auth = fl.FlightCallOptions(headers=[(b"authorization", b"Bearer s3cret")])
        info = _info(client, "t", auth)
        for endpoint, name in zip(info.endpoints, sorted(files)):
            assert _read(client, endpoint, auth).equals(files[name])
        # With a token, a partition's name is no ticket.
        with pytest.raises(ERRORS, match="unknown ticket"):
            client.do_get(fl.Ticket(b"t/1"), options=auth).read_all()
        [result] = list(client.do_action(fl.Action("drop", b"t"), options=auth))
        assert result.body.to_pybytes() == b"dropped t"
        assert list(client.list_flights(options=auth)) == []
        # Every endpoint's ticket died with the flight.
        for endpoint in info.endpoints:
            with pytest.raises(ERRORS):
                _read(client, endpoint, auth)


def test_a_directory_without_flight_and_an_empty_pattern_are_refused(tmp_path):
    directory, _ = _parts(tmp_path, ["0.arrows"])
    for args, why in ((["serve", f"t={directory}"], "serve it with --flight"),
                      (["serve", "--flight", "127.0.0.1:0", f"t={tmp_path}/none-*.arrows"],
                       "no file matches the pattern"),
                      (["serve", "--partition-bytes", "100", f"t={directory}/0.arrows"],
                       "use it with --flight")):
        r = subprocess.run([ferry_cli(), *args], capture_output=True, text=True, timeout=60)
        assert r.returncode == 2 and why in r.stderr, (args, r.stderr)


@pytest.mark.parametrize("parallel", [1, 2, 4])
def test_ferry_get_reads_the_endpoints_at_once_in_the_flights_order(tmp_path, parallel):
    directory, files = _parts(tmp_path, [f"part-{i}.arrows" for i in range(6)], rows=2000)
    want = pa.concat_tables([files[n] for n in sorted(files)])
    with Serve(f"t={directory}", tmp=str(tmp_path)) as s:
        out = tmp_path / "got.arrows"
        r = subprocess.run([ferry_cli(), "get", s.uri, "--path", "t", "--parallel", str(parallel),
                            "--to", str(out), "--no-progress", "-v"],
                           capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stderr
        assert pa.ipc.open_stream(str(out)).read_all().equals(want)
        # Each endpoint chose its own location: shared memory, its server being on this host.
        assert r.stderr.count("reading over shm") == 6, r.stderr
        # The summary counts the bytes by plane: every byte the read counted, over shared memory.
        total = int(re.search(r"t: \d+ batches, \d+ rows, (\d+) bytes", r.stdout).group(1))
        assert total > 0
        assert f"t: by plane: shm {total} bytes, ucx 0 bytes, grpc 0 bytes" in r.stdout
        grpc = subprocess.run([ferry_cli(), "get", s.uri, "--path", "t", "--via", "grpc",
                               "--parallel", str(parallel), "--no-progress"],
                              capture_output=True, text=True, timeout=120)
        assert f"t: by plane: shm 0 bytes, ucx 0 bytes, grpc {total} bytes" in grpc.stdout


def test_the_binding_reads_the_endpoints_at_once(tmp_path):
    import ferry
    directory, files = _parts(tmp_path, [f"{i}.arrows" for i in range(5)])
    want = pa.concat_tables([files[n] for n in sorted(files)])
    with Serve(f"t={directory}", tmp=str(tmp_path)) as s:
        client = ferry.flight.connect(s.uri)
        for parallel in (0, 1, 3):
            assert pa.table(client.do_get("t", parallel=parallel)).equals(want), parallel
        # Three reads, every endpoint over shared memory.
        planes = client.plane_bytes
        assert planes["shm"] > 0 and planes["ucx"] == 0 and planes["grpc"] == 0
        pa.table(client.do_get("t", via="grpc"))
        assert client.plane_bytes["grpc"] * 3 == planes["shm"]
        with pytest.raises(ValueError, match="parallel must be 0 or more"):
            client.do_get("t", parallel=-1)
        # One endpoint alone, through its own locations, also once pickled (as ferry.dask sends
        # endpoints to workers) or made from its ticket and locations.
        import pickle
        info = client.get_flight_info("t")
        for i, e in enumerate(info.endpoints):
            name = sorted(files)[i]
            copy = pickle.loads(pickle.dumps(e))
            assert copy.ticket == e.ticket and copy.locations == e.locations
            assert pa.table(client.do_get(copy)).equals(files[name]), name
            made = ferry.flight.Endpoint(e.ticket, list(e.locations))
            assert pa.table(client.do_get(made, via="grpc")).equals(files[name]), name
        assert client.last_location == s.uri

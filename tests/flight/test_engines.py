"""DuckDB and DataFusion read a ferry stream through the Arrow PyCapsule interface, with no ferry
code of theirs: the same SQL over ferry's read of a partitioned flight and over pyarrow.flight's
read of it (the oracle) gives the same rows. docs/engines.md shows both."""
import pyarrow as pa
import pyarrow.flight as fl
import pytest

pytest.importorskip("ferry._ferry", reason="the ferry binding is not installed (pip install ./python)")
duckdb = pytest.importorskip("duckdb", reason="duckdb is not installed (scripts/setup.sh installs it)")
datafusion = pytest.importorskip("datafusion",
                                 reason="datafusion is not installed (scripts/setup.sh installs it)")
import ferry.flight  # noqa: E402

from flight_support import mixed_table  # noqa: E402

# Exact aggregates only: a float sum depends on the order batches arrive in.
QUERY = ("SELECT s, count(*) AS n, sum(i) AS total, min(f) AS low, max(ts) AS last FROM trips "
         "WHERE i IS NOT NULL GROUP BY s ORDER BY s")


@pytest.fixture(scope="module")
def served():
    """An in-process ferry Flight server of a three-endpoint flight, and pyarrow.flight's read."""
    table = mixed_table(3000).select(["i", "f", "s", "ts"])
    with ferry.flight.Server.start() as server:
        server.add("trips", [table.slice(i * 1000, 1000).to_batches(max_chunksize=300)
                             for i in range(3)], partitioned=True)
        client = fl.connect(server.uri)
        info = client.get_flight_info(fl.FlightDescriptor.for_path("trips"))
        oracle = pa.concat_tables([client.do_get(e.ticket).read_all() for e in info.endpoints])
        assert oracle.equals(table)
        yield server, oracle


def _rows(table):
    return table.to_pylist()


def test_duckdb_queries_a_ferry_stream(served):
    server, oracle = served
    client = ferry.flight.connect(server.uri)
    con = duckdb.connect()
    trips = client.do_get("trips")  # a ferry.ArrayStream: DuckDB scans its __arrow_c_stream__
    got = con.sql(QUERY).to_arrow_table()
    trips = oracle  # the same query over pyarrow's read
    expected = con.sql(QUERY).to_arrow_table()
    del trips
    assert got.num_rows > 100 and _rows(got) == _rows(expected)


def test_datafusion_queries_a_ferry_stream(served):
    server, oracle = served
    client = ferry.flight.connect(server.uri)
    ctx = datafusion.SessionContext()
    ctx.from_arrow(client.do_get("trips"), name="trips")
    got = ctx.sql(QUERY).to_arrow_table()
    oracle_ctx = datafusion.SessionContext()
    oracle_ctx.from_arrow(oracle, name="trips")
    expected = oracle_ctx.sql(QUERY).to_arrow_table()
    assert got.num_rows > 100 and _rows(got) == _rows(expected)

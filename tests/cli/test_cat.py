"""`ferry cat` against pyarrow: every row it prints, for every type, equals pyarrow's values in
ferry's JSON rendering (docs/json.md, computed from pyarrow alone by python/tests/render.py), batch
by batch; --limit cuts each batch; --json is Arrow integration JSON with pyarrow's schema."""
import json
import re

import numpy as np
import pyarrow as pa
import pytest

from cli_support import integration_vectors, vector_id, write_ipc
from arrays import TYPE_CASES
from render import render

BATCH = re.compile(r"^batch (\d+) \((\d+) rows\):$")


def parse(text):
    """The schema lines and, per batch, (row count, rendered rows, 'more' count)."""
    lines = text.splitlines()
    assert lines[0] == "schema:"
    schema, batches = [], []
    for line in lines[1:]:
        m = BATCH.match(line)
        if m:
            batches.append({"index": int(m.group(1)), "rows": int(m.group(2)), "shown": [], "more": 0})
        elif not batches:
            schema.append(line.strip())
        elif line.startswith("  ... ") and line.endswith(" more"):
            batches[-1]["more"] = int(line.split()[1])
        else:
            batches[-1]["shown"].append(json.loads(line))
    return schema, batches


def render_column(arr):
    if isinstance(arr.type, pa.BaseExtensionType):
        return render_column(arr.storage)
    values = render(arr)
    if pa.types.is_union(arr.type) and len(arr) > 0:
        # Read from the type-id buffer: a null slot's pyarrow scalar reports the first type code,
        # and UnionArray.type_codes ignores a slice's offset.
        codes = np.frombuffer(arr.buffers()[1], dtype=np.int8)[arr.offset:arr.offset + len(arr)]
        return [[int(code), v[1]] for code, v in zip(codes, values)]
    return values


def expected_rows(batch, skip=()):
    columns = {name: render_column(batch.column(i)) for i, name in enumerate(batch.schema.names)
               if name not in skip}
    return [{name: values[r] for name, values in columns.items()} for r in range(batch.num_rows)]


def table_of_every_type():
    n = len(TYPE_CASES["int32"])
    return pa.table({k: v for k, v in TYPE_CASES.items() if len(v) == n})


@pytest.mark.parametrize("fmt", ["stream", "file"])
def test_rows_equal_pyarrow_values_for_every_type(run, tmp_path, fmt):
    table = table_of_every_type()
    path = write_ipc(tmp_path / f"t.{fmt}", table, fmt=fmt, chunk=15)
    r = run("cat", "--limit", "-1", path)
    assert r.returncode == 0, r.stderr
    schema, batches = parse(r.stdout)
    assert [line.split(":")[0] for line in schema] == table.schema.names
    want = table.to_batches(max_chunksize=15)
    assert [b["rows"] for b in batches] == [b.num_rows for b in want]
    for got, batch in zip(batches, want):
        assert got["more"] == 0
        expected = expected_rows(batch)
        for row, (g, e) in enumerate(zip(got["shown"], expected)):
            for name in table.schema.names:
                assert g[name] == e[name], (got["index"], row, name)


def test_sliced_and_nested_columns(run, tmp_path):
    names = ["list_struct", "map", "dense_union", "sparse_union", "run_end_encoded", "dictionary"]
    table = pa.table({k: TYPE_CASES[k] for k in names}).slice(5, 20)
    path = write_ipc(tmp_path / "t.arrows", table)
    _, batches = parse(run("cat", "--limit", "-1", path).stdout)
    assert [row for b in batches for row in b["shown"]] == expected_rows(table.combine_chunks().to_batches()[0])


def test_limit_cuts_each_batch(run, tmp_path):
    table = pa.table({"x": list(range(100)), "s": [f"r{i}" for i in range(100)]})
    path = write_ipc(tmp_path / "t.arrows", table, chunk=40)
    _, batches = parse(run("cat", path).stdout)  # the default limit: 20 rows a batch
    assert [(b["rows"], len(b["shown"]), b["more"]) for b in batches] == [(40, 20, 20), (40, 20, 20), (20, 20, 0)]
    assert batches[1]["shown"][0] == {"x": 40, "s": "r40"}
    _, batches = parse(run("cat", "--limit", "3", path).stdout)
    assert [len(b["shown"]) for b in batches] == [3, 3, 3]


@pytest.mark.parametrize("path", integration_vectors(".stream"), ids=vector_id)
def test_vectors_render_like_pyarrow(run, path):
    r = run("cat", "--limit", "-1", path)
    assert r.returncode == 0, r.stderr
    _, batches = parse(r.stdout)
    want = list(pa.ipc.open_stream(path))
    assert [b["rows"] for b in batches] == [b.num_rows for b in want]
    # Day-time and month intervals: pyarrow has no Python values for them, so no oracle.
    skip = {f.name for f in want[0].schema if "interval" in str(f.type)
            and f.type != pa.month_day_nano_interval()} if want else set()
    for got, batch in zip(batches, want):
        assert [{k: v for k, v in row.items() if k not in skip} for row in got["shown"]] == \
            expected_rows(batch, skip)


def test_json_is_integration_json_with_pyarrows_schema(run, tmp_path):
    table = pa.table({"i": pa.array([1, None, 3], pa.int32()), "s": ["a", "b", None]})
    path = write_ipc(tmp_path / "t.arrows", table, chunk=2)
    doc = json.loads(run("cat", "--json", path).stdout)
    assert [f["name"] for f in doc["schema"]["fields"]] == ["i", "s"]
    assert [b["count"] for b in doc["batches"]] == [2, 1]
    first = doc["batches"][0]["columns"]
    assert first[0]["DATA"] == [1, 0] or first[0]["DATA"][0] == 1
    assert first[0]["VALIDITY"] == [1, 0]
    assert first[1]["DATA"] == ["a", "b"]

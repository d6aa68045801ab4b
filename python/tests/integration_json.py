"""A reader of Arrow's integration-test JSON format (the .json.gz beside each arrow-testing IPC
vector), written for ferry's tests. It builds pyarrow arrays straight from the JSON buffers
(VALIDITY, DATA, OFFSET, SIZE, TYPE_ID, VIEWS, VARIADIC_DATA_BUFFERS) with
pa.Array.from_buffers, so the expected values do not pass through any IPC reader."""
import gzip
import json

import numpy as np
import pyarrow as pa

_UNITS = {"SECOND": "s", "MILLISECOND": "ms", "MICROSECOND": "us", "NANOSECOND": "ns"}


def _int_type(t):
    return getattr(pa, ("int" if t["isSigned"] else "uint") + str(t["bitWidth"]))()


def field_type(f):
    """The storage type of a JSON field (dictionary fields give their index and value types)."""
    t = f["type"]
    name = t["name"]
    kids = [pa.field(c["name"], _value_type(c), c["nullable"]) for c in f.get("children", [])]
    if name == "null":
        return pa.null()
    if name == "bool":
        return pa.bool_()
    if name == "int":
        return _int_type(t)
    if name == "floatingpoint":
        return {"HALF": pa.float16(), "SINGLE": pa.float32(), "DOUBLE": pa.float64()}[t["precision"]]
    if name in ("binary", "largebinary", "utf8", "largeutf8", "binaryview", "utf8view"):
        return {"binary": pa.binary(), "largebinary": pa.large_binary(), "utf8": pa.string(),
                "largeutf8": pa.large_string(), "binaryview": pa.binary_view(),
                "utf8view": pa.string_view()}[name]
    if name == "fixedsizebinary":
        return pa.binary(t["byteWidth"])
    if name == "decimal":
        width = t.get("bitWidth", 128)
        ctor = {32: pa.decimal32, 64: pa.decimal64, 128: pa.decimal128, 256: pa.decimal256}[width]
        return ctor(t["precision"], t["scale"])
    if name == "date":
        return pa.date32() if t["unit"] == "DAY" else pa.date64()
    if name == "time":
        unit = _UNITS[t["unit"]]
        return pa.time32(unit) if t["bitWidth"] == 32 else pa.time64(unit)
    if name == "timestamp":
        return pa.timestamp(_UNITS[t["unit"]], tz=t.get("timezone"))
    if name == "duration":
        return pa.duration(_UNITS[t["unit"]])
    if name == "interval":
        if t["unit"] != "MONTH_DAY_NANO":
            raise NotImplementedError(f"pyarrow has no constructor for {t['unit']} intervals")
        return pa.month_day_nano_interval()
    if name == "list":
        return pa.list_(kids[0])
    if name == "largelist":
        return pa.large_list(kids[0])
    if name == "listview":
        return pa.list_view(kids[0])
    if name == "largelistview":
        return pa.large_list_view(kids[0])
    if name == "fixedsizelist":
        return pa.list_(kids[0], t["listSize"])
    if name == "struct":
        return pa.struct(kids)
    if name == "map":
        return pa.map_(kids[0].type.field(0), kids[0].type.field(1), keys_sorted=t["keysSorted"])
    if name == "union":
        mode = t["mode"].lower()
        return pa.union(kids, mode, t["typeIds"])
    if name == "runendencoded":
        return pa.run_end_encoded(kids[0].type, kids[1].type)
    raise NotImplementedError(f"integration JSON type {name}")


def _value_type(f):
    if "dictionary" in f:
        d = f["dictionary"]
        return pa.dictionary(_int_type(d["indexType"]), field_type(f), d.get("isOrdered", False))
    return field_type(f)


def _bits(values):
    return pa.py_buffer(np.packbits(np.array(values, dtype=bool), bitorder="little").tobytes())


def _validity(col):
    v = col.get("VALIDITY")
    if v is None or all(v):
        return None
    return _bits(v)


def _ints(values, dtype):
    return pa.py_buffer(np.array([int(x) for x in values], dtype=dtype).tobytes())


def _decimal_bytes(values, width):
    n = width // 8
    return pa.py_buffer(b"".join(int(v).to_bytes(n, "little", signed=True) for v in values))


def _data_buffer(t, values):
    if pa.types.is_boolean(t):
        return _bits(values)
    if pa.types.is_integer(t) or pa.types.is_date(t) or pa.types.is_time(t) or \
            pa.types.is_timestamp(t) or pa.types.is_duration(t):
        return _ints(values, t.to_pandas_dtype() if pa.types.is_integer(t) else f"int{t.bit_width}")
    if pa.types.is_floating(t):
        dtype = {16: np.float16, 32: np.float32, 64: np.float64}[t.bit_width]
        return pa.py_buffer(np.array(values, dtype=dtype).tobytes())
    if pa.types.is_decimal(t):
        return _decimal_bytes(values, t.bit_width)
    if pa.types.is_fixed_size_binary(t):
        return pa.py_buffer(b"".join(bytes.fromhex(v) for v in values))
    if t == pa.month_day_nano_interval():
        out = b""
        for v in values:
            out += np.array([v["months"], v["days"]], np.int32).tobytes()
            out += np.array([v["nanoseconds"]], np.int64).tobytes()
        return pa.py_buffer(out)
    raise NotImplementedError(str(t))


def _bytes_of(t, v):
    return v.encode() if (pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t)) \
        else bytes.fromhex(v)


def build(f, col, dictionaries):
    """A pyarrow array for JSON field `f` and JSON column `col`."""
    count = col["count"]
    if "dictionary" in f:
        d = f["dictionary"]
        index_type = _int_type(d["indexType"])
        indices = pa.Array.from_buffers(index_type, count, [_validity(col), _ints(col["DATA"], index_type.to_pandas_dtype())])
        return pa.DictionaryArray.from_arrays(indices, dictionaries[d["id"]], ordered=d.get("isOrdered", False))
    t = f["type"]
    name = t["name"]
    typ = field_type(f)
    children = [build(c, cc, dictionaries) for c, cc in zip(f.get("children", []), col.get("children", []))]
    validity = _validity(col)
    if name == "null":
        return pa.nulls(count)
    if name in ("binary", "largebinary", "utf8", "largeutf8"):
        large = name.startswith("large")
        offsets = _ints(col["OFFSET"], np.int64 if large else np.int32)
        data = pa.py_buffer(b"".join(_bytes_of(typ, v) for v in col["DATA"]))
        return pa.Array.from_buffers(typ, count, [validity, offsets, data])
    if name in ("binaryview", "utf8view"):
        views = b""
        for v in col["VIEWS"]:
            size = v["SIZE"]
            if size <= 12:
                inline = _bytes_of(typ, v["INLINED"])
                views += np.array([size], np.int32).tobytes() + inline.ljust(12, b"\0")
            else:
                views += np.array([size], np.int32).tobytes() + bytes.fromhex(v["PREFIX_HEX"]) + \
                    np.array([v["BUFFER_INDEX"], v["OFFSET"]], np.int32).tobytes()
        variadic = [pa.py_buffer(bytes.fromhex(b)) for b in col["VARIADIC_DATA_BUFFERS"]]
        return pa.Array.from_buffers(typ, count, [validity, pa.py_buffer(views)] + variadic)
    if name in ("list", "largelist", "map"):
        offsets = _ints(col["OFFSET"], np.int64 if name == "largelist" else np.int32)
        return pa.Array.from_buffers(typ, count, [validity, offsets], children=children)
    if name in ("listview", "largelistview"):
        dtype = np.int64 if name == "largelistview" else np.int32
        return pa.Array.from_buffers(typ, count, [validity, _ints(col["OFFSET"], dtype), _ints(col["SIZE"], dtype)],
                                     children=children)
    if name in ("fixedsizelist", "struct"):
        return pa.Array.from_buffers(typ, count, [validity], children=children)
    if name == "union":
        buffers = [None, _ints(col["TYPE_ID"], np.int8)]
        if t["mode"] == "DENSE":
            buffers.append(_ints(col["OFFSET"], np.int32))
        return pa.Array.from_buffers(typ, count, buffers, children=children)
    if name == "runendencoded":
        return pa.RunEndEncodedArray.from_arrays(children[0], children[1])
    return pa.Array.from_buffers(typ, count, [validity, _data_buffer(typ, col["DATA"])])


def load(path):
    """Read a .json.gz: returns (fields, batches), each batch a dict of column name -> array (or
    NotImplementedError where pyarrow cannot build the type)."""
    with gzip.open(path) as fh:
        doc = json.load(fh)
    fields = doc["schema"]["fields"]
    # Dictionary value fields, by id, from the schema.
    value_fields = {}

    def collect(f):
        if "dictionary" in f:
            value_fields[f["dictionary"]["id"]] = {k: v for k, v in f.items() if k != "dictionary"}
        for c in f.get("children", []):
            collect(c)
    for f in fields:
        collect(f)
    dictionaries = {}
    # Dictionaries may nest: build in an order where inner ids come first.
    pending = list(doc.get("dictionaries", []))
    while pending:
        progress = False
        for d in list(pending):
            try:
                vf = dict(value_fields[d["id"]])
                vf["name"] = "dict"
                dictionaries[d["id"]] = build(vf, d["data"]["columns"][0], dictionaries)
                pending.remove(d)
                progress = True
            except KeyError:
                continue
        if not progress:
            raise ValueError("unresolvable dictionaries")
    batches = []
    for b in doc["batches"]:
        cols = []
        for f, c in zip(fields, b["columns"]):
            try:
                cols.append(build(f, c, dictionaries))
            except NotImplementedError as e:
                cols.append(e)
        batches.append(cols)
    return fields, batches

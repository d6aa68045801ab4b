"""The type cases as pyarrow arrays: every type ferry supports, each with nulls."""
import datetime
import decimal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

N = 40


def _nulls(values, every=5):
    return [None if i % every == 2 else v for i, v in enumerate(values)]


class UuidType(pa.ExtensionType):
    def __init__(self):
        super().__init__(pa.binary(16), "ferry.test_uuid")

    def __arrow_ext_serialize__(self):
        return b""

    @classmethod
    def __arrow_ext_deserialize__(cls, storage_type, serialized):
        return cls()


try:
    pa.register_extension_type(UuidType())
except pa.ArrowKeyError:
    pass  # already registered in this process


def type_cases():
    rng = np.random.default_rng(42)
    ints = rng.integers(-100, 100, N).tolist()
    words = ["", "a", "héllo", "ferry", "a string longer than twelve bytes", "日本語"]
    strs = [words[i % len(words)] for i in range(N)]
    byts = [bytes(range(i % 17)) for i in range(N)]
    out = {
        "null": pa.nulls(N),
        "bool": pa.array(_nulls([i % 3 == 0 for i in range(N)]), pa.bool_()),
    }
    for name in ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]:
        typ = getattr(pa, name)()
        vals = [abs(v) if name.startswith("u") else v for v in ints]
        out[name] = pa.array(_nulls(vals), typ)
    out["uint64_big"] = pa.array(_nulls([2**64 - 1 - i for i in range(N)]), pa.uint64())
    out["float16"] = pa.array(_nulls(np.array([v / 4 for v in ints], np.float16)), pa.float16())
    out["float32"] = pa.array(_nulls([v / 8 for v in ints]), pa.float32())
    out["float64"] = pa.array(_nulls([v / 3 for v in ints] + []), pa.float64())
    out["float64_special"] = pa.array([float("nan"), float("inf"), float("-inf"), -0.0, None], pa.float64())
    for width, typ in [(32, pa.decimal32(9, 2)), (64, pa.decimal64(18, 3)),
                       (128, pa.decimal128(38, 10)), (256, pa.decimal256(76, 20))]:
        scale = typ.scale
        vals = [decimal.Decimal(v * 12345).scaleb(-scale) for v in ints]
        out[f"decimal{width}"] = pa.array(_nulls(vals), typ)
    out["fixed_size_binary"] = pa.array(_nulls([bytes([i % 256] * 4) for i in range(N)]), pa.binary(4))
    out["binary"] = pa.array(_nulls(byts), pa.binary())
    out["large_binary"] = pa.array(_nulls(byts), pa.large_binary())
    out["binary_view"] = pa.array(_nulls(byts), pa.binary_view())
    out["string"] = pa.array(_nulls(strs), pa.string())
    out["large_string"] = pa.array(_nulls(strs), pa.large_string())
    out["string_view"] = pa.array(_nulls(strs), pa.string_view())
    out["date32"] = pa.array(_nulls([datetime.date(2020, 1, 1) + datetime.timedelta(days=v) for v in ints]))
    out["date64"] = pa.array(_nulls([v * 86400000 for v in ints]), pa.int64()).cast(pa.date64())
    out["time32_s"] = pa.array(_nulls([abs(v) * 100 for v in ints]), pa.int32()).cast(pa.time32("s"))
    out["time32_ms"] = pa.array(_nulls([abs(v) * 1000 for v in ints]), pa.int32()).cast(pa.time32("ms"))
    out["time64_us"] = pa.array(_nulls([abs(v) * 10**6 for v in ints]), pa.int64()).cast(pa.time64("us"))
    out["time64_ns"] = pa.array(_nulls([abs(v) * 10**9 for v in ints]), pa.int64()).cast(pa.time64("ns"))
    out["timestamp"] = pa.array(_nulls([v * 10**12 for v in ints]), pa.int64()).cast(pa.timestamp("us"))
    out["timestamp_tz"] = pa.array(_nulls([v * 10**15 for v in ints]), pa.int64()).cast(
        pa.timestamp("ns", tz="America/New_York"))
    out["duration"] = pa.array(_nulls([v * 1000 for v in ints]), pa.int64()).cast(pa.duration("ms"))
    out["interval_month_day_nano"] = pa.array(
        _nulls([pa.MonthDayNano([v, -v, v * 1000]) for v in ints]), pa.month_day_nano_interval())
    lists = [list(range(i % 4)) if i % 6 else [None, i] for i in range(N)]
    out["list"] = pa.array(_nulls(lists), pa.list_(pa.int32()))
    out["large_list"] = pa.array(_nulls(lists), pa.large_list(pa.int32()))
    out["list_view"] = pa.array(_nulls(lists), pa.list_view(pa.int32()))
    out["large_list_view"] = pa.array(_nulls(lists), pa.large_list_view(pa.int32()))
    out["fixed_size_list"] = pa.array(_nulls([[i, None, -i] for i in range(N)]), pa.list_(pa.int16(), 3))
    out["struct"] = pa.array(_nulls([{"a": v, "b": s} for v, s in zip(ints, strs)]),
                             pa.struct([("a", pa.int32()), ("b", pa.string())]))
    out["map"] = pa.array(_nulls([[(f"k{j}", j * v) for j in range(i % 3)] for i, v in enumerate(ints)]),
                          pa.map_(pa.string(), pa.int64()))
    codes = pa.array([i % 2 for i in range(N)], pa.int8())
    out["sparse_union"] = pa.UnionArray.from_sparse(
        codes, [pa.array(_nulls(ints), pa.int32()), pa.array(strs, pa.string())], ["i", "s"], [0, 1])
    dense_offsets = pa.array([i // 2 for i in range(N)], pa.int32())
    out["dense_union"] = pa.UnionArray.from_dense(
        codes, dense_offsets, [pa.array(_nulls(ints[: N // 2]), pa.float64()), pa.array(strs[: N // 2])],
        ["f", "s"], [0, 1])
    out["run_end_encoded"] = pc.run_end_encode(pa.array(_nulls([w for w in strs for _ in range(2)][:N])))
    out["dictionary"] = pa.array(_nulls([words[i % 4] for i in range(N)])).dictionary_encode()
    out["dictionary_int8"] = pa.DictionaryArray.from_arrays(
        pa.array(_nulls([i % 3 for i in range(N)]), pa.int8()), pa.array(["x", "y", "z"]))
    out["extension"] = pa.ExtensionArray.from_storage(
        UuidType(), pa.array(_nulls([bytes([i] * 16) for i in range(N)]), pa.binary(16)))
    out["list_struct"] = pa.array(
        _nulls([[{"a": j, "b": strs[j]} for j in range(i % 3)] for i in range(N)]),
        pa.list_(pa.struct([("a", pa.int32()), ("b", pa.string())])))
    return out


TYPE_CASES = type_cases()

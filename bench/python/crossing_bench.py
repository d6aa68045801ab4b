"""Per-call overhead of crossing the Python/C boundary with ferry, against pyarrow doing the
same with its own capsules (timeit, best of several repeats, microseconds per crossing).

    .venv/bin/python bench/python/crossing_bench.py [--number N] [--repeat R]

Crossings measured (a 3-element int64 array, so buffers never matter):
- pyarrow -> ferry -> pyarrow: ferry.array(pa_array) then pa.array(ferry_array), against
  pyarrow's own round trip pa.array(pa_array_wrapper) through __arrow_c_device_array__;
- one crossing each way, against pyarrow importing its own capsules;
- ferry.MemoryView(numpy_array) against memoryview(numpy_array) and np.from_dlpack.
"""
import argparse
import timeit

import numpy as np
import pyarrow as pa

import ferry


class Capsules:
    """Exposes only pyarrow's device capsules, so pa.array cannot short-cut its own arrays."""

    def __init__(self, arr):
        self.arr = arr

    def __arrow_c_device_array__(self, requested_schema=None, **kwargs):
        return self.arr.__arrow_c_device_array__(requested_schema, **kwargs)


def best(stmt, number, repeat):
    return min(timeit.repeat(stmt, number=number, repeat=repeat)) / number * 1e6


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--number", type=int, default=20000)
    p.add_argument("--repeat", type=int, default=7)
    args = p.parse_args()
    n, r = args.number, args.repeat
    arr = pa.array([1, 2, 3])
    wrapped = Capsules(arr)
    f = ferry.array(arr)
    a = np.arange(12.0)

    imp = pa.Array._import_from_c_device_capsule
    rows = [
        ("round trip pa -> ferry -> pa", lambda: imp(*ferry.array(arr).__arrow_c_device_array__()),
         "round trip pa -> pa (own capsules)", lambda: imp(*imp(*arr.__arrow_c_device_array__()).__arrow_c_device_array__())),
        ("pa -> ferry: ferry.array(pa)", lambda: ferry.array(arr),
         "pa -> pa: import pa's capsules", lambda: imp(*arr.__arrow_c_device_array__())),
        ("ferry -> pa: import ferry's capsules", lambda: imp(*f.__arrow_c_device_array__()),
         "pa -> pa: import pa's capsules", lambda: imp(*arr.__arrow_c_device_array__())),
        ("pa.array(ferry_array)", lambda: pa.array(f),
         "pa.array(capsule wrapper of pa)", lambda: pa.array(wrapped)),
        ("ferry.MemoryView(numpy)", lambda: ferry.MemoryView(a),
         "memoryview(numpy)", lambda: memoryview(a)),
        ("ferry.from_dlpack(numpy)", lambda: ferry.from_dlpack(a),
         "np.from_dlpack(numpy)", lambda: np.from_dlpack(a)),
    ]
    print(f"{'ferry crossing':38} {'us':>7}   {'pyarrow / python baseline':38} {'us':>7}  ratio")
    for name, fn, base_name, base in rows:
        t = best(fn, n, r)
        b = best(base, n, r)
        print(f"{name:38} {t:7.3f}   {base_name:38} {b:7.3f}  {t / b:5.2f}x")


if __name__ == "__main__":
    main()

"""Per-call overhead of crossing the Python/C boundary with ferry, against pyarrow doing the
same with its own capsules (timeit, best of several repeats, microseconds per crossing).

    .venv/bin/python bench/python/crossing_bench.py [--number N] [--repeat R]
        [--exchange-bench build/bench/bench/ferry_exchange_bench]

Crossings measured (a 3-element int64 array, so buffers never matter):
- pyarrow -> ferry -> pyarrow: ferry.array(pa_array) then pa.array(ferry_array), against
  pyarrow's own round trip pa.array(pa_array_wrapper) through __arrow_c_device_array__;
- one crossing each way, against pyarrow importing its own capsules;
- ferry.MemoryView(numpy_array) against memoryview(numpy_array) and np.from_dlpack;
- DLPack 1.3's C exchange API with torch (3-element int64 CPU tensors): C code taking a tensor
  through ferry's C API (FerryMemoryViewFromDLPackExchange, timed in C by ferry_exchange_bench in
  an embedded interpreter) against `__dlpack__` through Python (the capsule made and dropped, its
  deleter run); ferry.from_dlpack through the table against the same through __dlpack__; and
  back to torch through torch's table (MemoryView.export_to) against torch.from_dlpack.
"""
import json
import os
import subprocess
import sys
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
    here = os.path.dirname(os.path.abspath(__file__))
    p.add_argument("--exchange-bench",
                   default=os.path.join(here, "..", "..", "build", "bench", "bench", "ferry_exchange_bench"),
                   help="the ferry_exchange_bench binary (the C side of the exchange rows)")
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
    exchange_rows(n, r, args.exchange_bench)


class DunderOnly:
    """Offers only __dlpack__, so a consumer cannot take torch's exchange API."""

    def __init__(self, t):
        self.t = t

    def __dlpack__(self, **kwargs):
        return self.t.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self.t.__dlpack_device__()


def exchange_rows(n, r, exchange_bench):
    """DLPack 1.3's exchange API against __dlpack__, with torch as the producer."""
    import torch

    t = torch.arange(3, dtype=torch.int64)
    view = ferry.from_dlpack(t)
    wrapped = DunderOnly(t)
    dunder = best(lambda: t.__dlpack__(), n, r)
    print()
    print(f"{'DLPack 1.3 exchange (torch)':38} {'us':>7}   {'through __dlpack__':38} {'us':>7}  ratio")
    c = run_exchange_bench(exchange_bench, n * 10, r)
    if c is not None:
        print(f"{'C: FerryMemoryViewFromDLPackExchange':38} {c['torch_ferry_c_api'] / 1e3:7.3f}   "
              f"{'t.__dlpack__() from Python':38} {dunder:7.3f}  {c['torch_ferry_c_api'] / 1e3 / dunder:5.2f}x")
        print(f"{'C: torch table alone (export+delete)':38} {c['torch_producer_only'] / 1e3:7.3f}   "
              f"{'t.__dlpack__() from Python':38} {dunder:7.3f}  {c['torch_producer_only'] / 1e3 / dunder:5.2f}x")
        vd = best(lambda: view.__dlpack__(max_version=(1, 3)), n, r)
        print(f"{'C: ferry table (export+delete)':38} {c['ferry_producer'] / 1e3:7.3f}   "
              f"{'view.__dlpack__() from Python':38} {vd:7.3f}  {c['ferry_producer'] / 1e3 / vd:5.2f}x")
    rows = [
        ("ferry.from_dlpack(torch), table", lambda: ferry.from_dlpack(t),
         "ferry.from_dlpack(torch), __dlpack__", lambda: ferry.from_dlpack(wrapped)),
        ("view.export_to(torch.Tensor)", lambda: view.export_to(torch.Tensor),
         "torch.from_dlpack(view)", lambda: torch.from_dlpack(view)),
    ]
    for name, fn, base_name, base in rows:
        a, b = best(fn, n, r), best(base, n, r)
        print(f"{name:38} {a:7.3f}   {base_name:38} {b:7.3f}  {a / b:5.2f}x")


def run_exchange_bench(path, number, repeat):
    """ferry_exchange_bench's figures (ns per crossing), or None when it is not built."""
    if not path or not os.path.exists(path):
        print(f"(ferry_exchange_bench not found at {path!r}: build with -DFERRY_BUILD_BENCH=ON; "
              "the C rows are left out)")
        return None
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    out = subprocess.run([path, str(number), str(repeat)], env=env, capture_output=True, text=True,
                         check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


if __name__ == "__main__":
    main()

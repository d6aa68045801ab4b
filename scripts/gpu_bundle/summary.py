"""The GPU bundle's helper (run.sh calls it; python3 and pyarrow, nothing of ferry's):

    summary.py gtest RESULT.xml       one line "P passed, F failed, S skipped", and the failed cases
                                      with the first line of each one's message; exit 1 on a
                                      failure or a skip (a GPU run must run every CUDA case)
    summary.py junit RESULT.xml       the same for pytest's JUnit XML
    summary.py ipc FERRY OUT_DIR      `ferry serve --device cuda:0` and `ferry get --device cuda:0`
                                      across two processes: a mixed table, equal to pyarrow's read,
                                      then 1 GiB, timed; its last line is the verdict
    summary.py bench BENCH.json IPC.log   the figures as Markdown, each beside the driver's copy
"""
import json
import os
import re
import subprocess
import sys
import time
import xml.etree.ElementTree as ET


def _why(element):
    """The first line of a failure's message (or of its text), at most 160 characters."""
    text = (element.get("message") or element.text or "").strip()
    first = text.splitlines()[0] if text else "no message"
    return first if len(first) <= 160 else first[:157] + "..."


def gtest(path):
    run = skipped = 0
    failures = []
    for case in ET.parse(path).getroot().iter("testcase"):
        if case.get("status") == "notrun":
            continue
        failure = case.find("failure")
        if failure is not None:
            failures.append(f"{case.get('classname')}.{case.get('name')}: {_why(failure)}")
        elif case.find("skipped") is not None or case.get("result") == "skipped":
            skipped += 1
        else:
            run += 1
    return run, failures, skipped


def junit(path):
    run = skipped = 0
    failures = []
    for case in ET.parse(path).getroot().iter("testcase"):
        failure = case.find("failure")
        if failure is None:
            failure = case.find("error")
        if failure is not None:
            failures.append(f"{case.get('classname')}::{case.get('name')}: {_why(failure)}")
        elif case.find("skipped") is not None:
            skipped += 1
        else:
            run += 1
    return run, failures, skipped


def verdict(counts):
    """Prints "P passed, F failed, S skipped", then which failed and why (the first three), so a
    run's summary names the case to look at; 0 only when something ran and nothing failed or
    was skipped."""
    run, failures, skipped = counts
    line = f"{run} passed, {len(failures)} failed, {skipped} skipped"
    if failures:
        line += ": " + "; ".join(failures[:3]) + ("; ..." if len(failures) > 3 else "")
    print(line)
    return 0 if not failures and skipped == 0 and run > 0 else 1


def _serve(ferry, path):
    proc = subprocess.Popen([ferry, "serve", "--device", "cuda:0", f"d={path}"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = proc.stdout.readline()
    if not line:
        raise RuntimeError("ferry serve exited: " + proc.stderr.read())
    return proc, line.split()[1]


def _get(ferry, uri, *args):
    start = time.monotonic()
    r = subprocess.run([ferry, "get", uri, "--ticket", "d", "--device", "cuda:0", "--no-progress",
                        *args], capture_output=True, text=True, timeout=300)
    return r, time.monotonic() - start


def ipc(ferry, out):
    import pyarrow as pa
    import pyarrow.ipc as pipc
    n = 100_000
    table = pa.table({"i": pa.array(range(n), pa.int64()),
                      "f": pa.array([x * 0.5 for x in range(n)], pa.float64()),
                      "s": pa.array([f"row {x % 977}" if x % 13 else None for x in range(n)]),
                      "l": pa.array([[x, x + 1] if x % 7 else [] for x in range(n)])})
    small = os.path.join(out, "ipc_small.arrows")
    with pipc.new_stream(small, table.schema) as w:
        w.write_table(table, max_chunksize=20_000)
    proc, uri = _serve(ferry, small)
    try:
        got_path = os.path.join(out, "ipc_small_got.arrows")
        r, _ = _get(ferry, uri, "--to", got_path, "--force")
        if r.returncode != 0:
            raise RuntimeError(f"ferry get failed: {r.stderr}")
        got = pipc.open_stream(got_path).read_all()
        if not got.equals(table):
            raise RuntimeError("the batches that landed on cuda:0 differ from pyarrow's read")
        print("mixed table: equal to pyarrow's read after landing on cuda:0 in another process")
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    # 1 GiB of int64 and float64 in 16 batches (16 MiB in a smoke run, FERRY_BENCH_SMOKE=1, as
    # the dry run on the stand-in makes): the time to open the handle and land it.
    total = (16 << 20) if os.environ.get("FERRY_BENCH_SMOKE") else (1 << 30)
    rows = total // 16
    batch = pa.record_batch({"i": pa.array(range(rows // 16), pa.int64()),
                             "f": pa.array([0.5] * (rows // 16), pa.float64())})
    big = os.path.join(out, "ipc_big.arrows")
    with pipc.new_stream(big, batch.schema) as w:
        for _ in range(16):
            w.write_batch(batch)
    proc, uri = _serve(ferry, big)
    try:
        times = []
        for _ in range(3):
            r, seconds = _get(ferry, uri)
            if r.returncode != 0:
                raise RuntimeError(f"ferry get of 1 GiB failed: {r.stderr}")
            times.append(seconds)
            summary = r.stderr.strip().splitlines()[-1] if r.stderr.strip() else ""
        print(f"{total >> 20} MiB get: best of 3 whole processes {min(times) * 1e3:.1f} ms; "
              f"{summary}")
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        os.unlink(big)
    print(f"ipc ok: best {min(times) * 1e3:.1f} ms for {total >> 20} MiB")
    return 0


def bench(path, ipc_log):
    data = json.load(open(path))
    runs = {b["name"]: b for b in data["benchmarks"] if "error_message" not in b}
    errors = sorted({b["name"] for b in data["benchmarks"] if "error_message" in b})

    def gbs(name):
        b = runs.get(name)
        return b["bytes_per_second"] / 1e9 if b and "bytes_per_second" in b else None

    print("| copy | size | ferry | cuMemcpy | ratio |")
    print("| --- | --- | --- | --- | --- |")
    sizes = ((1 << 16, "64 KiB"), (1 << 20, "1 MiB"), (1 << 30, "1 GiB"))
    kinds = [(f"BM_{k}/{d}_" + "{}", f"{label} {d}")
             for k, label in (("Pinned", "pinned"), ("Pageable", "pageable"),
                              ("PageableAsync", "pageable on a stream"))
             for d in ("HostToDevice", "DeviceToHost")]
    kinds.append(("BM_DeviceToDevice/{}", "device to device"))
    for pattern, what in kinds:
        for size, label in sizes:
            f = gbs(pattern.format("ferry") + f"/{size}/real_time")
            c = gbs(pattern.format("cuMemcpy") + f"/{size}/real_time")
            if f is not None and c is not None:
                print(f"| {what} | {label} | {f:.2f} GB/s | {c:.2f} GB/s | {f / c:.2f}x |")
    print()
    print("| operation | counts | time |")
    print("| --- | --- | --- |")
    for name, b in sorted(runs.items()):
        if name.startswith(("BM_Sizes", "BM_Copy_Table")):
            counts = ", ".join(f"{k} {v:g}" for k, v in b.items()
                               if k in ("round_trips", "ferry_allocations", "ferry_copies",
                                        "driver_d2h_copies", "driver_host_waits"))
            scale = {"ns": 1e-6, "us": 1e-3, "ms": 1.0, "s": 1e3}[b.get("time_unit", "ns")]
            print(f"| {name.split('/iterations')[0][3:]} | {counts} | "
                  f"{b['real_time'] * scale:.3f} ms |")
    d2d = runs.get(f"BM_DeviceToDevice/cuMemcpy/{1 << 30}/real_time")
    text = open(ipc_log).read() if os.path.exists(ipc_log) else ""
    m = re.search(r"ipc ok: best ([\d.]+) ms for (\d+) MiB", text)
    if m:
        line = (f"\nCUDA IPC: `ferry get --device cuda:0` of {m.group(2)} MiB, whole process "
                f"(opening the handle and landing every batch): {m.group(1)} ms")
        if d2d:
            scale = {"ns": 1e-6, "us": 1e-3, "ms": 1.0, "s": 1e3}[d2d.get("time_unit", "ns")]
            line += f"; cuMemcpy device to device of 1 GiB: {d2d['real_time'] * scale:.2f} ms"
        print(line)
    if errors:
        print("\nSkipped or failed benchmarks: " + ", ".join(errors))
        return 1
    return 0


def main(argv):
    mode = argv[1]
    if mode == "gtest":
        return verdict(gtest(argv[2]))
    if mode == "junit":
        return verdict(junit(argv[2]))
    if mode == "ipc":
        return ipc(argv[2], argv[3])
    if mode == "bench":
        return bench(argv[2], argv[3])
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))

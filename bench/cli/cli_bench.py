"""The command line as users run it: `ferry serve` and `ferry get` as processes, on an IPC file of
mixed columns (int64, float64, strings, list<int32>; 21 batches, 1 GiB by default), beside
ucx_perftest (tag_bw and ucp_get at 64 MiB) in the same run.

For each path it times whole `ferry get` processes (spawn to exit, median of --repeat runs, each
reading the whole file), splits each into the connection's set-up and the transfer after it (as
`ferry get`'s summary line reports them; ucx_perftest's figures exclude its own wire-up), and samples the server's memory every 2 ms while they run: its own
memory (RssAnon + RssShmem, what a copy per client would grow) and the file's pages mapped
(RssFile, the page cache, which the kernel shares and may drop). Prints a Markdown table with the
ratios to the project's goals, and writes JSON for plot_cli.py.

    FERRY_CLI=build/release/tools/ferry/ferry .venv/bin/python bench/cli/cli_bench.py \\
        --out cli.json
"""

import argparse
import json
import os
import re
import socket
import statistics
import subprocess
import threading
import time

import numpy as np
import pyarrow as pa

PATHS = [
    # name, transport, body, validation
    ("shm type 1, default validation", "shm", "list", "default"),
    ("shm type 1, full validation", "shm", "list", "full"),
    ("UCX type 1 (ucp_get), default validation", "ucx", "list", "default"),
    ("UCX type 0 (tagged), default validation", "ucx", "packed", "default"),
    ("UCX type 0 (tagged), full validation", "ucx", "packed", "full"),
]


def make_file(path, total_bytes, batches):
    """An uncompressed IPC file of about `total_bytes` in `batches` batches."""
    rows = max(1, total_bytes // 41 // batches)  # about 41 bytes a row in these four columns
    rng = np.random.default_rng(7)
    schema = pa.schema([("i", pa.int64()), ("f", pa.float64()), ("s", pa.string()),
                        ("l", pa.list_(pa.int32()))])
    with pa.OSFile(str(path), "wb") as f, pa.ipc.new_file(f, schema) as w:
        for b in range(batches):
            base = b * rows
            ints = np.arange(base, base + rows, dtype=np.int64)
            strings = pa.array(np.char.add("row ", (ints % 100000).astype(str)))
            offsets = pa.array(np.arange(0, 2 * rows + 1, 2, dtype=np.int32))
            lists = pa.ListArray.from_arrays(offsets, pa.array(rng.integers(0, 1 << 30, 2 * rows,
                                                                            dtype=np.int32)))
            w.write_batch(pa.record_batch([pa.array(ints), pa.array(rng.random(rows)), strings,
                                           lists], schema=schema))
    return rows * batches


def memory(pid):
    fields = {}
    try:
        for line in open(f"/proc/{pid}/status"):
            key, _, value = line.partition(":")
            fields[key] = value
    except OSError:
        return None
    kib = lambda k: int(fields.get(k, "0 kB").split()[0])  # noqa: E731
    return {"own": kib("RssAnon") + kib("RssShmem"), "file": kib("RssFile")}


class Sampler(threading.Thread):
    """Peaks of a process's memory, sampled every 2 ms until stopped."""

    def __init__(self, pid):
        super().__init__(daemon=True)
        self.pid, self.stop, self.peak = pid, threading.Event(), {"own": 0, "file": 0}

    def run(self):
        while not self.stop.is_set():
            m = memory(self.pid)
            if m:
                for k in m:
                    self.peak[k] = max(self.peak[k], m[k])
            time.sleep(0.002)


def serve(cli, transport, body, path):
    proc = subprocess.Popen([cli, "serve", "--transport", transport, "--body-type", body, f"t={path}"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = proc.stdout.readline()
    if not line:
        raise RuntimeError("ferry serve exited: " + proc.stderr.read())
    return proc, line.split()[1]


def run_path(cli, path, rows, transport, body, validation, repeat):
    server, uri = serve(cli, transport, body, path)
    try:
        time.sleep(0.3)
        idle = memory(server.pid)
        sampler = Sampler(server.pid)
        sampler.start()
        times, connects, transfers = [], [], []
        for _ in range(repeat + 1):  # the first run warms the page cache and is not counted
            start = time.perf_counter()
            r = subprocess.run([cli, "get", uri, "--ticket", "t", "--no-progress", "--validation",
                                validation], capture_output=True, text=True)
            elapsed = time.perf_counter() - start
            if r.returncode != 0 or f"{rows} rows" not in r.stdout:
                raise RuntimeError(f"ferry get failed: {r.stdout} {r.stderr}")
            times.append(elapsed)
            # "...; connected in C ms, then R MB/s)": the set-up, then the transfer's own rate.
            m = re.search(r"connected in ([0-9.]+) ms, then ([0-9.]+) MB/s", r.stdout)
            if m is None:
                raise RuntimeError(f"ferry get printed no connect/transfer split: {r.stdout}")
            connects.append(float(m.group(1)))
            transfers.append(float(m.group(2)) * 1e6)
        sampler.stop.set()
        sampler.join()
    finally:
        server.terminate()
        _, log = server.communicate(timeout=30)
    lent = re.search(r"files served in place (\d+)", log)
    whole = re.search(r"\((\d+) sent whole from their file\)", log)
    return {
        "get_s": statistics.median(times[1:]),
        "connect_ms": statistics.median(connects[1:]),
        "transfer_bps": statistics.median(transfers[1:]),
        "idle_own_kib": idle["own"],
        "idle_file_kib": idle["file"],
        "peak_own_kib": sampler.peak["own"],
        "peak_file_kib": sampler.peak["file"],
        "lent_in_place": bool(lent and lent.group(1) == "1"),
        "bodies_from_file": int(whole.group(1)) if whole else 0,
    }


def lent_in_place_text(r):
    if r["lent_in_place"]:
        return "yes"
    if r["bodies_from_file"]:
        return f"whole bodies from the file's pages ({r['bodies_from_file']} in all)"
    return "no"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def perftest(test, size=64 << 20, iters=20):
    """ucx_perftest's overall bandwidth in bytes/s (its MB is 2^20 bytes), or None."""
    for _ in range(3):
        port = str(free_port())
        common = ["-t", test, "-s", str(size), "-n", str(iters), "-p", port]
        server = subprocess.Popen(["ucx_perftest", *common], stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL)
        time.sleep(0.5)
        out = subprocess.run(["ucx_perftest", "127.0.0.1", *common], capture_output=True,
                             text=True).stdout
        server.terminate()
        server.wait()
        m = re.search(r"Final:\s+(\S+)\s+(\S+)\s+(\S+)\s+(\S+)\s+(\S+)\s+(\S+)", out)
        if m:
            return float(m.group(6)) * 1048576
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mib", type=int, default=1024, help="file size in MiB (default 1024)")
    ap.add_argument("--batches", type=int, default=21)
    ap.add_argument("--repeat", type=int, default=3, help="timed gets per path (median)")
    ap.add_argument("--dir", default="/tmp", help="where the file is written")
    ap.add_argument("--out", help="write the figures as JSON here")
    args = ap.parse_args()
    cli = os.environ.get("FERRY_CLI", "build/release/tools/ferry/ferry")
    path = os.path.join(args.dir, f"ferry_cli_bench_{args.mib}.arrow")
    if not os.path.exists(path):
        print(f"writing {path} ...", flush=True)
        make_file(path, args.mib << 20, args.batches)
    reader = pa.ipc.open_file(path)
    rows = sum(reader.get_batch(i).num_rows for i in range(reader.num_record_batches))
    size = os.path.getsize(path)
    results = {"file_bytes": size, "rows": rows, "paths": {}, "perftest": {},
               "perftest_runs": {"tag_bw": [], "ucp_get": []}}
    # ucx_perftest runs before and after the ferry paths (this VM's speed drifts within minutes);
    # ratios are to the faster of its two runs.
    for test in ("tag_bw", "ucp_get"):
        results["perftest_runs"][test].append(perftest(test))
    for name, transport, body, validation in PATHS:
        print(f"{name} ...", flush=True)
        results["paths"][name] = run_path(cli, path, rows, transport, body, validation, args.repeat)
    for test in ("tag_bw", "ucp_get"):
        results["perftest_runs"][test].append(perftest(test))
        results["perftest"][test] = max(r for r in results["perftest_runs"][test] if r)
    tag, get = results["perftest"]["tag_bw"], results["perftest"]["ucp_get"]
    runs = {t: ", ".join(f"{r / 1e9:.2f}" for r in v if r) for t, v in results["perftest_runs"].items()}
    print(f"\n{size / 2**30:.2f} GiB file, {rows} rows in {args.batches} batches; "
          f"ucx_perftest tag_bw {tag / 1e9:.2f} GB/s (runs before and after: {runs['tag_bw']}), "
          f"ucp_get {get / 1e9:.2f} GB/s ({runs['ucp_get']}) (64 MiB)\n")
    print("| path | `ferry get` process | throughput, whole process | of which connect | transfer after connect | vs ucx_perftest (transfer; whole process) | server own memory, peak above idle | file pages mapped, peak above idle | lent in place |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for name, _, body, _ in PATHS:
        r = results["paths"][name]
        rate = size / r["get_s"]
        peer_rate = get if body == "list" else tag
        peer = ("" if "UCX" not in name else
                f"{r['transfer_bps'] / peer_rate:.0%}; {rate / peer_rate:.0%}")
        grown = r["peak_own_kib"] - r["idle_own_kib"]
        print(f"| {name} | {r['get_s'] * 1e3:.0f} ms | {rate / 1e9:.2f} GB/s | "
              f"{r['connect_ms']:.1f} ms | {r['transfer_bps'] / 1e9:.2f} GB/s | {peer} | "
              f"{grown / 1024:.1f} MiB ({grown * 1024 / size:.1%} of the file) | "
              f"{(r['peak_file_kib'] - r['idle_file_kib']) / 1024:.0f} MiB | "
              f"{lent_in_place_text(r)} |")
    if args.out:
        with open(args.out, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()

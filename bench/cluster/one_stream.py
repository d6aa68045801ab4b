"""bench/cluster/one_stream.py: one stream from host a to host c for bench/cluster/cluster_bench.py,
read by `ferry get`, by ferry's UCX transport alone (bench/transport/ucx_stream.cpp) and by UCX's
own tag_bw, in alternating rounds."""
import json
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)), "tests", "support"))
from ferry_process import ServeProcess, ferry_cli  # noqa: E402
from ucx_peer import tag_bw  # noqa: E402


def ucx_stream_binary():
    """ferry_ucx_stream, beside the ferry executable's build (FERRY_UCX_STREAM overrides)."""
    if os.environ.get("FERRY_UCX_STREAM"):
        return os.environ["FERRY_UCX_STREAM"]
    build = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(ferry_cli()))))
    return os.path.join(build, "bench", "ferry_ucx_stream")


def one_stream(hosts, path, rounds, tmp):
    """One stream from host a to host c, in `rounds` rounds after a warm-up: `ferry get` over
    UCX with packed bodies sent whole from the file's pages and from a kept copy (the rate after
    connecting, from its summary line, in MiB/s); ferry's UCX transport alone moving as many
    bytes in 8 MiB messages (ferry_ucx_stream, its rate after connecting), each from its own
    place and all from one, then one `tag_bw` stream. They alternate, so a ratio compares runs
    minutes apart at most; returns each round's rates."""
    servers = {}
    size = os.path.getsize(path)
    messages = max(1, size // (8 << 20))
    transports = []
    try:
        for keep in (False, True):
            s = ServeProcess(["--transport", "ucx", "--listen", f"{hosts['a'].ip}:0", "--insecure",
                              "--body-type", "packed", *(["--keep"] if keep else []), f"t={path}"],
                             tmp=str(tmp), wrap=hosts["a"].wrap)
            servers["kept" if keep else "file"] = (s, s.first_line().split()[-1])

        def get(uri):
            r = hosts["c"].run([ferry_cli(), "get", uri, "--ticket", "t", "--no-progress",
                                "--validation", "none"], capture_output=True, text=True,
                               timeout=600)
            if r.returncode != 0:
                raise RuntimeError(f"ferry get: exit {r.returncode}: {r.stderr}")
            return float(re.search(r"then ([0-9.]+) MB/s", r.stdout).group(1)) * 1e6 / (1 << 20)

        # Each message from its own place (as a kept dataset's server sends), and every message
        # from one place (as tag_bw sends, from a buffer that stays in cache).
        for places in (messages, 1):
            t = hosts["a"].popen([ucx_stream_binary(), "serve", f"{hosts['a'].ip}:0",
                                  str(8 << 20), str(messages), str(places)],
                                 stdout=subprocess.PIPE, text=True)
            transports.append((t, t.stdout.readline().strip()))
            if not transports[-1][1]:
                raise RuntimeError("ferry_ucx_stream serve did not start")

        def stream(address):
            r = hosts["c"].run([ucx_stream_binary(), "get", address, str(8 << 20),
                                str(messages)], capture_output=True, text=True, timeout=600)
            if r.returncode != 0:
                raise RuntimeError(f"ferry_ucx_stream get: exit {r.returncode}: {r.stderr}")
            return json.loads(r.stdout.splitlines()[-1])["mb_per_s"] * 1e6 / (1 << 20)

        for _, uri in servers.values():
            get(uri)  # warm-up: the file's pages, the kept copy, the client's first buffers
        for _, address in transports:
            stream(address)
        runs = []
        for _ in range(rounds):
            run = {name: get(uri) for name, (_, uri) in servers.items()}
            run["transport"] = stream(transports[0][1])
            run["transport, one place"] = stream(transports[1][1])
            run["tag_bw"] = tag_bw(hosts, 8 << 20, max(20, messages), ("a",))["a"]
            runs.append(run)
        return runs
    finally:
        for s, _ in servers.values():
            s.close()
        for t, _ in transports:
            t.kill()
            t.wait()

#!/usr/bin/env python3
"""bench/dipc/small_batches.py: small batches between two processes, ferry and every peer in one
run. A batch is R rows of x int64, f float64 and s a short string ("v<i % 1000>"; 1,000 rows are
about 25 KB), for R in --rows.

Each case is run twice:
  throughput  --batches batches sent as fast as the producer can: batches a second, from the
              consumer's first request to its last batch (connecting apart);
  latency     --latency-batches batches, the producer pacing itself at --rate a second, so that
              nothing queues: the one-way latency of each batch, from the producer's write (its
              clock written into x[0] just before it hands the batch over) to the consumer's
              handing it to its caller, as p50, p99 and p99.9 (CLOCK_MONOTONIC on both ends).

The cases:
  ferry shm kept       a shared-memory server of batches written once (`--keep`), lent as they
                       are; the client checks each at the default level (throughput only: nothing
                       is written per batch to stamp)
  ferry shm kept full  the same, the client validating every batch fully
  ferry shm live       a producer makes each batch (a copy of a template) as the server asks;
                       type-1 bodies into the shared region
  ferry shm loaned     the same, its batches built beforehand in the server's shared region
                       (Server::region_allocator), so that the server lends each where it lies
                       instead of copying it (the C ring's copy into its slot has no part here)
  ferry shm live, no spin  the same as live, the client sleeping at once when it finds nothing (every
                       other ferry case spins --ferry-spin µs first, the client's default, and
                       across a steady stream's gaps up to four times that)
  ferry ucx t0 / t1    the same producer over UCX on this host (ferry=1: UCX's shared memory),
                       packed bodies and buffer lists
  ferry tcp t0 / t1    over UCX between two network namespaces (UCX_TLS=tcp,self)
  ferry Flight         ferry's Flight server to a pyarrow.flight client (small_batches_peers.py)
  C ring, futex        the limit: bench/dipc/ring_limit.c, the same bytes through a shared ring
                       (stamped before the producer's copy into its slot, as ferry's batch is
                       before its server's copy), the consumer sleeping on a futex when it finds
                       nothing
  C ring, spin         the same, each side spinning --spin times before it sleeps
  C ring, kept         the limit of "ferry shm kept": every batch's bytes written once into a
                       memfd, only their indices through the ring; the consumer maps the memfd
                       afresh and reads each batch's first and last 8 bytes (throughput only).
                       Both ask for huge pages, as ferry's segments do: they get them where
                       shmem_enabled allows (printed with the tables), and then map 512x fewer
                       pages
  C ring, kept, spin   the same, spinning --spin times before sleeping
  C ring, kept, full   the limit of "ferry shm kept full": the kept limit reading also every byte
                       of each batch's string offsets and characters, 8 at a time (what full
                       validation must read; x and f need nothing)
  pyarrow socket       pyarrow's IPC stream over a Unix socket (small_batches_peers.py)
  pyarrow.flight       pyarrow.flight's own server and client; throughput of the batches built
                       beforehand, as ferry's Flight server serves them, latency live
  Flight replay (limit)  the limit of any Flight server to the pyarrow.flight client:
                       bench/flight/flight_replay.cpp, gRPC's generic service answering DoGet
                       with FlightData messages encoded beforehand (throughput only)
  iceoryx2             iceoryx2's publish-subscribe from PyPI, through its Python binding
  ucx_perftest         tag_bw (message rate) and tag_lat (its one-way figure: half a round trip,
                       busy polling) at one batch's bytes, on this host and between namespaces

Prints one Markdown table per batch size, beside it the threads of ferry's throughput runs (each
busy thread of the client and the server: the share of the run it was on a CPU, and the share it
waited, runnable, for one), and writes --out (JSON) and --plot (p50 latency against batch size,
PNG).

    .venv/bin/python bench/dipc/small_batches.py --tree build/bench/bench --out small.json \\
        --plot docs/img/small_batches.png
"""
import argparse
import json
import os
import socket
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "tests", "support"))
import machine  # noqa: E402 (tests/support, on the path above)
SMOKE = os.environ.get("FERRY_BENCH_SMOKE", "0") not in ("", "0")
TIMEOUT = 300


def last_json(text, what):
    for line in reversed(text.splitlines()):
        if line.startswith("{"):
            return json.loads(line)
    raise RuntimeError(f"{what} printed no result:\n{text[-3000:]}")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Ferry:
    """ferry_small_batches: a server (wrapped in a namespace where `server_wrap` says) and a
    client (in `client_wrap`)."""

    def __init__(self, tree, spin):
        self.exe = os.path.join(tree, "ferry_small_batches")
        self.spin = spin

    def run(self, transport, body, mode, rows, batches, rate, validation="default",
            listen="-", server_wrap=(), client_wrap=(), env=None, spin=None):
        server = subprocess.Popen(
            [*server_wrap, self.exe, "serve", transport, body, mode, str(rows), str(batches),
             str(rate), listen], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
        try:
            ready = server.stdout.readline().split()
            if len(ready) != 2 or ready[0] != "READY":
                raise RuntimeError(f"the ferry server did not start ({transport}, body {body})")
            stamped = "1" if mode in ("live", "loaned") else "0"
            r = subprocess.run([*client_wrap, self.exe, "read", ready[1], validation, str(batches),
                                str(rows), stamped, str(warmup(batches)),
                                str(self.spin if spin is None else spin), str(server.pid)],
                               capture_output=True, text=True, timeout=TIMEOUT, env=env)
            if r.returncode != 0:
                raise RuntimeError(f"the ferry client failed: {r.stderr[-2000:]}")
            result = last_json(r.stdout, "the ferry client")
        finally:
            try:
                rest, _ = server.communicate(timeout=30)  # closes its stdin: it stops
            except subprocess.TimeoutExpired:
                server.kill()
                rest, _ = server.communicate()
        # A stamped stream's server says how long each batch took it, from the stamp to its
        # next ask (its part of the one-way latency).
        turnaround = [line.split(" ", 1)[1] for line in rest.splitlines()
                      if line.startswith("TURNAROUND ")]
        if result.get("latency_ns") and turnaround:
            result["latency_ns"]["server_p50"] = json.loads(turnaround[-1])["p50"]
        return result


def warmup(batches):
    return min(100, batches // 10)


def ring(tree, batch_bytes, batches, rate, spin, kept=False, touch=0):
    r = subprocess.run([os.path.join(tree, "ferry_ring_limit"), str(batch_bytes), str(batches),
                        str(rate), str(warmup(batches)), str(spin)]
                       + (["kept"] if kept else []) + ([str(touch)] if touch else []),
                       capture_output=True, text=True, timeout=TIMEOUT)
    if r.returncode != 0:
        raise RuntimeError(f"ferry_ring_limit failed: {r.stderr[-2000:]}")
    return last_json(r.stdout, "ferry_ring_limit")


def peer(name, rows, batches, rate, extra=()):
    """A case of small_batches_peers.py; None where its dependency is missing (exit 3)."""
    r = subprocess.run([sys.executable, os.path.join(HERE, "small_batches_peers.py"), name,
                        "--rows", str(rows), "--batches", str(batches), "--rate", str(rate),
                        "--warmup", str(warmup(batches)), *extra],
                       capture_output=True, text=True, timeout=TIMEOUT)
    if r.returncode == 3:
        print(f"  {name}: {r.stdout.strip()}", file=sys.stderr)
        return None
    if r.returncode != 0:
        raise RuntimeError(f"small_batches_peers.py {name} failed:\n{r.stderr[-3000:]}")
    return last_json(r.stdout, f"small_batches_peers.py {name}")


def perftest(test, size, iters, server_wrap=(), client_wrap=(), address="127.0.0.1", env=None):
    """ucx_perftest's final line: (median latency us, message rate a second). Its server serves
    one client and exits, also when that client failed part way (a client that came while the
    server was still starting, on a loaded machine), so a server that has exited is started
    again, on a fresh port, until one run succeeds or a minute has passed."""
    deadline = time.monotonic() + 60
    server, r = None, None
    try:
        while True:
            if server is None or server.poll() is not None:
                port = free_port()
                args = ["-t", test, "-s", str(size), "-n", str(iters), "-p", str(port), "-f"]
                server = subprocess.Popen([*server_wrap, "ucx_perftest", *args],
                                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                          env=env)
            r = subprocess.run([*client_wrap, "ucx_perftest", address, *args],
                               capture_output=True, text=True, timeout=TIMEOUT, env=env)
            if r.returncode == 0:
                break
            if time.monotonic() > deadline:
                raise RuntimeError(f"ucx_perftest {test} failed for a minute (exit "
                                   f"{r.returncode}): {r.stdout[-1000:]}{r.stderr[-1000:]}")
            time.sleep(0.05)  # the server listens once it has made its worker
        numbers = [line.split() for line in r.stdout.splitlines()
                   if line.strip() and line.split()[0].isdigit()]
        final = [float(x) for x in numbers[-1]]
        # iterations, p50, average, overall latency (us), MB/s average, overall, msg/s, overall
        return final[1], final[7]
    finally:
        if server is not None:
            server.kill()
            server.wait()


def measure(args, rows, hosts):
    ferry = Ferry(args.tree, args.ferry_spin)
    n, m, rate = args.batches, args.latency_batches, args.rate
    results = {}

    def case(name, throughput, latency=None):
        results[name] = {"batches_per_s": throughput and throughput["batches_per_s"],
                         "latency_ns": latency and latency["latency_ns"]}
        if throughput and throughput.get("threads"):
            results[name]["threads"] = throughput["threads"]
        print(f"  {name}: {results[name]}", file=sys.stderr, flush=True)

    if args.only == "flight":
        flight_cases(case, rows, n, m, rate, args.tree)
        return results
    if args.only == "loaned":
        # Each round runs live, loaned and the C ring (the limit, waking with a futex and
        # spinning) in turn; each case's figures are the rounds' medians.
        batch_bytes = results_bytes(rows)
        rounds = {}
        for _ in range(args.rounds):
            for mode in ("live", "loaned"):
                case(f"ferry shm {mode}", ferry.run("shm", "1", mode, rows, n, 0),
                     ferry.run("shm", "1", mode, rows, m, rate))
                rounds.setdefault(f"ferry shm {mode}", []).append(results[f"ferry shm {mode}"])
            for name, spin in (("C ring, futex", 0), ("C ring, spin", args.spin)):
                case(name, ring(args.tree, batch_bytes, n, 0, spin),
                     ring(args.tree, batch_bytes, m, rate, spin))
                rounds.setdefault(name, []).append(results[name])
        return {name: medians(runs) for name, runs in rounds.items()}
    case("ferry shm kept", ferry.run("shm", "1", "kept", rows, n, 0))
    case("ferry shm kept full", ferry.run("shm", "1", "kept", rows, n, 0, "full"))
    case("ferry shm live", ferry.run("shm", "1", "live", rows, n, 0),
         ferry.run("shm", "1", "live", rows, m, rate))
    case("ferry shm loaned", ferry.run("shm", "1", "loaned", rows, n, 0),
         ferry.run("shm", "1", "loaned", rows, m, rate))
    case("ferry shm live, no spin", ferry.run("shm", "1", "live", rows, n, 0, spin=0),
         ferry.run("shm", "1", "live", rows, m, rate, spin=0))
    for body in ("0", "1"):
        case(f"ferry ucx t{body}", ferry.run("ucx", body, "live", rows, n, 0, listen="127.0.0.1:0"),
             ferry.run("ucx", body, "live", rows, m, rate, listen="127.0.0.1:0"))
    tcp_env = dict(os.environ, UCX_TLS="tcp,self")
    if hosts is not None:
        a, b = hosts["a"], hosts["b"]
        for body in ("0", "1"):
            def remote(batches, pace, body=body):
                return ferry.run("ucx", body, "live", rows, batches, pace, listen=f"{a.ip}:0",
                                 server_wrap=a.wrap, client_wrap=b.wrap, env=tcp_env)
            case(f"ferry tcp t{body}", remote(n, 0), remote(m, rate))
    flight_cases(case, rows, n, m, rate, args.tree, peers=False)
    batch_bytes = results_bytes(rows)
    case("C ring, futex", ring(args.tree, batch_bytes, n, 0, 0),
         ring(args.tree, batch_bytes, m, rate, 0))
    case("C ring, spin", ring(args.tree, batch_bytes, n, 0, args.spin),
         ring(args.tree, batch_bytes, m, rate, args.spin))
    case("C ring, kept", ring(args.tree, batch_bytes, n, 0, 0, kept=True))
    case("C ring, kept, spin", ring(args.tree, batch_bytes, n, 0, args.spin, kept=True))
    case("C ring, kept, full", ring(args.tree, batch_bytes, n, 0, 0, kept=True,
                                    touch=string_bytes(rows)))
    sock = peer("pyarrow_socket", rows, n, 0)
    if sock:
        case("pyarrow socket", sock, peer("pyarrow_socket", rows, m, rate))
    flight_cases(case, rows, n, m, rate, args.tree, ferry=False)
    ice = peer("iceoryx2", rows, n, 0)
    if ice:
        case("iceoryx2 (Python binding)", ice, peer("iceoryx2", rows, m, rate))
    iters = max(1000, n)
    lat, _ = perftest("tag_lat", batch_bytes, iters)
    _, msg_rate = perftest("tag_bw", batch_bytes, iters)
    results["ucx_perftest, this host"] = {"batches_per_s": msg_rate,
                                          "latency_ns": {"p50": lat * 1e3}}
    if hosts is not None:
        wrap = {"server_wrap": hosts["a"].wrap, "client_wrap": hosts["b"].wrap,
                "address": hosts["a"].ip, "env": tcp_env}
        lat, _ = perftest("tag_lat", batch_bytes, iters, **wrap)
        _, msg_rate = perftest("tag_bw", batch_bytes, iters, **wrap)
        results["ucx_perftest, tcp"] = {"batches_per_s": msg_rate,
                                        "latency_ns": {"p50": lat * 1e3}}
    return results


def flight_cases(case, rows, n, m, rate, tree, ferry=True, peers=True):
    """The Flight cases, all read by pyarrow.flight's client: ferry's server; pyarrow's own and
    the replay, the limit of any server to that client."""
    if ferry:
        flight = peer("ferry_flight", rows, n, 0)
        if flight:
            case("ferry Flight", flight)
    if not peers:
        return
    pf = peer("pyarrow_flight", rows, n, 0, ["--prebuilt"])
    if pf:
        case("pyarrow.flight", pf, peer("pyarrow_flight", rows, m, rate))
    replay = peer("flight_replay", rows, n, 0,
                  ["--replay", os.path.join(tree, "ferry_flight_replay")])
    if replay:
        case("Flight replay (limit)", replay)


def medians(runs):
    """One case's rounds as one: the median of each figure."""
    def median(values):
        values = sorted(v for v in values if v is not None)
        return values[len(values) // 2] if values else None

    return {"batches_per_s": median(r["batches_per_s"] for r in runs),
            "latency_ns": {k: median((r["latency_ns"] or {}).get(k) for r in runs)
                           for k in ("p50", "p99", "p999", "server_p50")}}


def results_bytes(rows):
    """One batch's buffer bytes: x and f 8 bytes a row, s's int32 offsets and its characters."""
    return 16 * rows + string_bytes(rows)


def string_bytes(rows):
    """The bytes of a batch's string column, its int32 offsets and its characters: all that full
    validation must read of a batch (x and f have no nulls and every value is valid)."""
    return 4 * (rows + 1) + sum(len(f"v{i % 1000}") for i in range(rows))


def us(ns):
    return "—" if ns is None else f"{ns / 1e3:.1f}"


def table(rows, results):
    out = [f"### {rows:,} rows a batch ({results_bytes(rows):,} bytes)", "",
           "| case | batches/s | p50 µs | p99 µs | p99.9 µs |", "| --- | --- | --- | --- | --- |"]
    for name, r in results.items():
        lat = r["latency_ns"] or {}
        rate = r["batches_per_s"]
        out.append(f"| {name} | {'—' if rate is None else f'{rate:,.0f}'} | {us(lat.get('p50'))} "
                   f"| {us(lat.get('p99'))} | {us(lat.get('p999'))} |")
    server = [f"{name} {us(r['latency_ns']['server_p50'])} µs of {us(r['latency_ns']['p50'])}"
              for name, r in results.items()
              if r["latency_ns"] and r["latency_ns"].get("server_p50") is not None]
    if server:
        out += ["", "The server's part of the p50, from the stamp to its next ask (made once the "
                "batch is sent; the rest is the hop and the client): " + "; ".join(server) + "."]
    return "\n".join(out)


def thread_table(rows, results):
    """Where the throughput runs of ferry's cases spent their time: each busy thread of the client
    and the server, the share of the run it was on a CPU and the share it waited, runnable, for
    one (the kernel's schedstat). A thread near 100% on a CPU sets the pace; waits show the
    threads crowding the cores."""
    out = [f"#### Threads of ferry's throughput runs, {rows:,} rows a batch", "",
           "| case | side | thread | on a CPU | waiting for a CPU |", "| --- | --- | --- | --- | --- |"]
    cpu = []
    for name, r in results.items():
        threads = sorted(r.get("threads") or [], key=lambda t: (t["side"], -t["on_cpu"]))
        for t in threads:
            out.append(f"| {name} | {t['side']} | {t['name']} | {t['on_cpu']:.0%} "
                       f"| {t['waiting']:.0%} |")
        if threads and r["batches_per_s"]:
            # The CPU time a batch cost both processes: the cores in use over the batches a second.
            cores = sum(t["on_cpu"] for t in threads)
            cpu.append(f"{name} {cores / r['batches_per_s'] * 1e6:.1f} µs ({cores:.2f} cores)")
    if len(out) == 4:
        return ""
    return "\n".join(out + ["", "CPU time a batch, both processes' threads: " + "; ".join(cpu)
                            + "."])


def goals(results):
    """The goals of 1,000-row batches, each figure beside its peer or limit from the same run."""
    def rate(name):
        r = results.get(name)
        return r and r["batches_per_s"]

    def p50(name):
        """The case's median latency in microseconds, or None when it did not run."""
        r = results.get(name)
        ns = r and r["latency_ns"] and r["latency_ns"].get("p50")
        return ns and ns / 1e3

    rows = []
    absolute = object()  # stands for "no peer": the goal is a bound on ferry's own figure

    def goal(what, mine, theirs, want, higher=True):
        if mine is None:
            return
        if theirs is absolute:
            ok = mine >= want if higher else mine <= want
            rows.append((what, f"{mine:,.1f}", "—", "—", "met" if ok else "not met"))
            return
        if not theirs:
            return  # the peer did not run: no ratio to report
        ratio = mine / theirs
        ok = ratio >= want if higher else ratio <= want
        rows.append((what, f"{mine:,.1f}", f"{theirs:,.1f}", f"{ratio:.2f}×",
                     "met" if ok else "not met"))

    goal("shm kept, batches/s >= 1,000,000", rate("ferry shm kept"), absolute, 1e6)
    goal("shm kept full validation, batches/s >= 500,000", rate("ferry shm kept full"),
         absolute, 5e5)
    goal("C ring, kept, full (the reads full validation needs) >= 500,000 (can any reader?)",
         rate("C ring, kept, full"), absolute, 5e5)
    goal("shm live p50 (us) <= 2", p50("ferry shm live"), absolute, 2, False)
    goal("shm loaned p50 (us) <= 2 (written in the region: no copy)", p50("ferry shm loaned"),
         absolute, 2, False)
    goal("shm kept / C ring (futex) throughput >= 0.5x", rate("ferry shm kept"),
         rate("C ring, futex"), 0.5)
    goal("shm kept / C ring, kept (futex) throughput >= 0.5x", rate("ferry shm kept"),
         rate("C ring, kept"), 0.5)
    goal("shm kept / C ring, kept, spin throughput >= 0.5x", rate("ferry shm kept"),
         rate("C ring, kept, spin"), 0.5)
    goal("shm live p50 (us) / C ring (futex) p50 <= 2x", p50("ferry shm live"),
         p50("C ring, futex"), 2.0, False)
    goal("shm loaned p50 (us) / C ring (futex) p50 <= 2x", p50("ferry shm loaned"),
         p50("C ring, futex"), 2.0, False)
    goal("shm loaned p50 (us) / C ring, spin p50 <= 2x (both spinning across the gaps)",
         p50("ferry shm loaned"), p50("C ring, spin"), 2.0, False)
    goal("shm kept / pyarrow socket throughput >= 5x", rate("ferry shm kept"),
         rate("pyarrow socket"), 5.0)
    goal("shm live p50 (us) / pyarrow socket p50 <= 0.2x", p50("ferry shm live"),
         p50("pyarrow socket"), 0.2, False)
    goal("UCX shared memory t0, batches/s >= 300,000", rate("ferry ucx t0"), absolute, 3e5)
    goal("UCX shared memory t1, batches/s >= 100,000", rate("ferry ucx t1"), absolute, 1e5)
    goal("TCP t0 / ucx_perftest tag_bw over TCP >= 0.9x", rate("ferry tcp t0"),
         rate("ucx_perftest, tcp"), 0.9)
    goal("Flight: ferry's server / pyarrow's, to pyarrow.flight >= 1.5x", rate("ferry Flight"),
         rate("pyarrow.flight"), 1.5)
    goal("Flight: the replay (no server work) / pyarrow's server >= 1.5x (can any server?)",
         rate("Flight replay (limit)"), rate("pyarrow.flight"), 1.5)
    out = ["### Goals, 1,000 rows a batch", "", "| goal | ferry | peer or limit | ratio | |",
           "| --- | --- | --- | --- | --- |"]
    out += [f"| {' | '.join(r)} |" for r in rows]
    return "\n".join(out)


def plot(path, every):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(10, 5))
    names = sorted({n for res in every.values() for n, r in res.items()
                    if r["latency_ns"] and r["latency_ns"].get("p50") is not None})
    sizes = sorted(every)
    # A colour of its own for each case (tab20 has 20); ferry's cases solid, the limits (the C
    # ring) dotted, the other peers dashed, so that a case is told by its line as well.
    colours = plt.get_cmap("tab20").colors
    for i, name in enumerate(names):
        xs = [s for s in sizes if every[s].get(name, {}).get("latency_ns")]
        style = (("-", "o") if name.startswith("ferry") else
                 (":", "^") if name.startswith("C ring") else ("--", "s"))
        ax.plot(xs, [every[s][name]["latency_ns"]["p50"] / 1e3 for s in xs], linestyle=style[0],
                marker=style[1], color=colours[i % len(colours)], label=name)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("rows a batch")
    ax.set_ylabel("one-way latency, p50 (µs)")
    ax.set_title("Small batches between two processes (paced; lower is better)")
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tree", default="build/bench/bench",
                        help="the directory of ferry_small_batches and ferry_ring_limit")
    parser.add_argument("--rows", default="100,1000,10000", help="batch sizes, comma-separated")
    parser.add_argument("--batches", type=int, default=None,
                        help="batches in a throughput run (default 20,000; a smoke run 200)")
    parser.add_argument("--latency-batches", type=int, default=None,
                        help="batches in a latency run (default 5,000; a smoke run 100)")
    parser.add_argument("--rate", type=float, default=10000,
                        help="batches a second in a latency run")
    parser.add_argument("--spin", type=int, default=20000,
                        help="the C ring's spins before it sleeps, in its spinning case")
    parser.add_argument("--ferry-spin", type=int, default=50,
                        help="ferry's client spin in µs (dipc::ClientOptions::spin; its default "
                             "is 50), in every ferry case but the one with no spin")
    parser.add_argument("--only", choices=["flight", "loaned"],
                        help="run only these cases: flight (ferry's Flight server, pyarrow's and "
                             "the replay, each read by pyarrow.flight); loaned (ferry shm live, "
                             "ferry shm loaned and the C ring, futex and spinning, in turn "
                             "--rounds times; each figure the rounds' median)")
    parser.add_argument("--rounds", type=int, default=1,
                        help="with --only loaned: how many times the cases run in turn (each "
                             "round's figures go to stderr)")
    parser.add_argument("--no-namespaces", action="store_true",
                        help="leave out the cases between network namespaces")
    parser.add_argument("--out", help="write the results as JSON here")
    parser.add_argument("--plot", help="write the latency plot (PNG) here")
    args = parser.parse_args()
    args.batches = args.batches or (200 if SMOKE else 20000)
    args.latency_batches = args.latency_batches or (100 if SMOKE else 5000)
    every = {}
    hosts = None
    if not args.no_namespaces and args.only is None:
        from netns import Hosts, Unavailable
        try:
            hosts = Hosts(["a", "b"]).__enter__()
        except Unavailable as e:
            print(f"no network namespaces ({e}): the TCP cases are left out", file=sys.stderr)
    try:
        for rows in (int(r) for r in args.rows.split(",")):
            print(f"{rows} rows a batch", file=sys.stderr, flush=True)
            every[rows] = measure(args, rows, hosts)
    finally:
        if hosts is not None:
            hosts.__exit__(None, None, None)
    here = machine.describe()
    print(machine.line(here) + "\n")
    for rows, results in every.items():
        print(table(rows, results) + "\n")
        threads = thread_table(rows, results)
        if threads:
            print(threads + "\n")
    if 1000 in every:
        print(goals(every[1000]) + "\n")
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"rate": args.rate, "batches": args.batches, "machine": here,
                       "latency_batches": args.latency_batches, "results": every}, f, indent=1)
    if args.plot:
        plot(args.plot, every)


if __name__ == "__main__":
    main()

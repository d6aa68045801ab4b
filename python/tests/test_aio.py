"""ferry.aio: the asyncio faces of the Flight and dissociated-IPC clients, against a pyarrow.flight
server (an independent implementation) and ferry's own servers, whose counters show what a
cancelled read leaves behind. The loop's responsiveness while 1 GiB moves and the thread count
under 1,000 concurrent calls are measured in child processes that hold nothing else."""
import asyncio
import json
import os
import subprocess
import sys
import textwrap
import threading

import pyarrow as pa
import pytest

pytest.importorskip("ferry._ferry", reason="the ferry binding is not installed (pip install ./python)")
import ferry  # noqa: E402
import ferry.aio  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "support"))
from pyarrow_flight_server import TableServer  # noqa: E402


def table(rows, batches=1):
    t = pa.table({"x": pa.array(range(rows), pa.int64()),
                  "s": pa.array([f"v{i}" for i in range(rows)])})
    return t.combine_chunks().to_batches(max_chunksize=max(1, rows // batches))


@pytest.fixture
def pyarrow_server():
    server = TableServer({"t": pa.Table.from_batches(table(5000, 5))})
    thread = threading.Thread(target=server.serve, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    thread.join()


def as_table(batches):
    return pa.Table.from_batches([pa.record_batch(b) for b in batches])


def test_flight_calls_against_pyarrow_server(pyarrow_server):
    uri = f"grpc://127.0.0.1:{pyarrow_server.port}"
    want = pyarrow_server.tables["t"]

    async def main():
        async with await ferry.aio.flight.connect(uri) as client:
            info, flights, schema = await asyncio.gather(
                client.get_flight_info("t"), client.list_flights(), client.get_schema("t"))
            assert (info.path, info.total_records) == (["t"], 5000)
            assert [f.path for f in flights] == [["t"]]
            assert pa.schema(schema) == want.schema
            got = [b async for b in client.do_get("t")]
            assert as_table(got) == want
            by_ticket = await client.do_get(b"t", columns=[1]).read_all()
            assert as_table(by_ticket) == want.select(["s"])
            by_name = await client.do_get("t", columns=["s"]).read_all()
            assert as_table(by_name) == want.select(["s"])
            with pytest.raises(ferry.InvalidArgumentError, match="nope"):
                await client.do_get("t", columns=["nope"]).open()
            await client.do_put("up", want.slice(100, 50))
            assert await client.do_action("echo", b"abc") == [b"cba"]
            assert await client.list_actions() == [("echo", "returns its body reversed")]
            with pytest.raises(ferry.Error, match="no table missing"):
                await client.get_flight_info("missing")
            with pytest.raises(ValueError, match="via must be"):
                client.do_get("t", via="carrier pigeon")  # refused at the call, not later
        assert client._dispatcher.closed

    asyncio.run(main())
    assert pyarrow_server.tables["up"] == want.slice(100, 50)


@pytest.mark.parametrize("timeout", [0, -1.0, float("nan"), float("inf")])
def test_both_flight_faces_refuse_a_bad_timeout_alike(timeout):
    # Refused before any connection is tried: nothing listens at port 1.
    why = "timeout must be a positive number of seconds"
    with pytest.raises(ValueError, match=why):
        ferry.flight.connect("grpc://127.0.0.1:1", timeout=timeout)

    async def main():
        with pytest.raises(ValueError, match=why):
            await ferry.aio.flight.connect("grpc://127.0.0.1:1", timeout=timeout)

    asyncio.run(main())


def test_dipc_reads_and_refusals():
    batches = table(4000, 4)
    with ferry.dipc.Server.start("shm") as server:
        server.add("d", batches)

        async def main():
            stream = ferry.aio.dipc.connect(server.uri, "d", columns=[0])
            got = [b async for b in stream]
            assert as_table(got) == as_table(batches).select(["x"])
            assert stream.schema is not None and stream.location == server.uri
            with pytest.raises(ferry.Error, match="nope"):
                async for _ in ferry.aio.dipc.connect(server.uri, "nope"):
                    pass
            # Paced: the server sends each batch when the stream asks for it.
            sent = server.stats.batches_sent
            got = [b async for b in ferry.aio.dipc.connect(server.uri, "d", window=0)]
            assert as_table(got) == as_table(batches)
            assert server.stats.batches_sent - sent == 4
            # Sleeping at once, or spinning long, reads the same batches.
            for spin in (0, 20_000):
                got = [b async for b in ferry.aio.dipc.connect(server.uri, "d", spin=spin)]
                assert as_table(got) == as_table(batches), spin

        asyncio.run(main())


async def settled(check, seconds):
    """Poll check() on the loop until it holds or `seconds` pass; the time it took, or None."""
    loop = asyncio.get_running_loop()
    start = loop.time()
    while loop.time() - start < seconds:
        if check():
            return loop.time() - start
        await asyncio.sleep(0.01)
    return None


def many_batches(count, rows=65536):
    one = pa.record_batch({"x": pa.array(range(rows), pa.int64())})
    return [one] * count


def test_cancel_frees_the_dipc_loans():
    with ferry.dipc.Server.start("shm", region_bytes=64 << 20) as server:
        server.add("d", many_batches(200))

        async def reader(started):
            async for _ in ferry.aio.dipc.connect(server.uri, "d"):
                started.set()
                await asyncio.sleep(3600)  # holds its batch until cancelled

        async def main():
            started = asyncio.Event()
            task = asyncio.create_task(reader(started))
            await asyncio.wait_for(started.wait(), 30)
            lent = server.stats
            assert lent.clients_active == 1 and lent.bytes_in_flight > 0
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task

            def freed():
                s = server.stats
                return (s.clients_active == 0 and s.bytes_in_flight == 0
                        and s.addresses_lent == s.addresses_freed + s.addresses_reclaimed)
            took = await settled(freed, 1.0)
            assert took is not None, f"the server still lends after 1 s: {server.stats}"
            assert server.stats.batches_sent < 200  # the read stopped early

        asyncio.run(main())


def test_a_region_of_two_batches_is_read_whole():
    """The server's region holds two batches, so it sends the third only once the first is
    freed: a batch the loop drops is released off the loop while the worker already waits for
    the next one, and that wait must not keep the free from going."""
    batches = many_batches(12, rows=1 << 20)  # 8 MiB each
    with ferry.dipc.Server.start("shm", region_bytes=20 << 20) as server:
        server.add("d", batches)

        async def main():
            got = []
            async for batch in ferry.aio.dipc.connect(server.uri, "d"):
                got.append(pa.record_batch(batch).column(0)[-1].as_py())
            return got

        got = asyncio.run(asyncio.wait_for(main(), 60))
        assert got == [(1 << 20) - 1] * 12
        assert server.stats.batches_sent == 12


def test_cancel_closes_the_flight_session():
    with ferry.flight.Server.start() as server:
        # More frames than a shm:// client's ring holds (a kept dataset lends without a bound on
        # its region, so the ring is what holds the server back).
        server.add("t", many_batches(20000, rows=256))
        blocking = ferry.flight.connect(server.uri)

        def shm():
            return json.loads(blocking.do_action("stats")[0])["shm"]

        async def reader(client, started):
            async for _ in client.do_get("t", via="shm"):
                started.set()
                await asyncio.sleep(3600)

        async def main():
            async with await ferry.aio.flight.connect(server.uri) as client:
                started = asyncio.Event()
                task = asyncio.create_task(reader(client, started))
                await asyncio.wait_for(started.wait(), 30)
                assert shm()["sessions_active"] == 1
                task.cancel()
                with pytest.raises(asyncio.CancelledError):
                    await task
                took = await settled(lambda: shm()["sessions_active"] == 0, 1.0)
                assert took is not None, f"the shm session is still open after 1 s: {shm()}"
                assert shm()["batches_sent"] < 20000

        asyncio.run(main())


def child(code, *args):
    """Run `code` in a fresh interpreter that imports nothing else; its last stdout line is JSON."""
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(code), *args], check=True,
                         capture_output=True, text=True, timeout=240)
    return json.loads(out.stdout.strip().splitlines()[-1])


SERVE = """
import sys, numpy as np, pyarrow as pa, ferry
rows = int(sys.argv[1]) // 64
offsets = pa.py_buffer((np.arange(rows + 1, dtype=np.int32) * 60).tobytes())
strings = pa.Array.from_buffers(pa.string(), rows,
                                [None, offsets, pa.py_buffer(b"0123456789" * 6 * rows)])
server = ferry.flight.Server.start(keep=True)
server.add("t", [pa.record_batch({"s": strings})] * int(sys.argv[2]))
print(server.uri, flush=True)
sys.stdin.read()
"""

#: The flight the child processes read: 1 GiB of strings (60 bytes and a 4-byte offset a row) in
#: 16 batches of 64 MiB. Full validation checks every string's UTF-8 as it arrives (about 0.1 s
#: a batch on a 2-core VM), so the read takes long enough to tick through, and a read that
#: blocked the loop would show.
BATCH_BYTES, BATCHES = 64 << 20, 16


def serve(batch_bytes, batches):
    """A ferry Flight server in its own process serving flight "t": one batch of strings of
    `batch_bytes`, `batches` times, copied once into its shared region. Yields its URI."""
    proc = subprocess.Popen([sys.executable, "-c", SERVE, str(batch_bytes), str(batches)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        yield proc.stdout.readline().strip()
    finally:
        proc.stdin.close()
        proc.wait(timeout=60)


@pytest.fixture
def gib_flight():
    yield from serve(BATCH_BYTES, BATCHES)


@pytest.fixture
def small_flight():
    yield from serve(64 << 10, 1)


THREADS = """
import asyncio, json, os, sys
import ferry.aio

def threads():  # the live ones: a thread in do_exit (PF_EXITING) is about to be reaped
    n = 0
    for task in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{task}/stat") as f:
                stat = f.read()
        except OSError:  # gone meanwhile
            continue
        n += not int(stat[stat.rindex(")") + 2:].split()[6]) & 0x4
    return n

def named(name):  # this process's threads of that name now
    n = 0
    for task in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{task}/comm") as f:
                n += f.read().strip() == name
        except OSError:  # gone meanwhile
            continue
    return n

async def main():
    client = await ferry.aio.flight.connect(sys.argv[1])
    most = threads()
    async def one():
        nonlocal most
        info = await client.get_flight_info("t")
        most = max(most, threads())
        return info.total_records
    records = await asyncio.gather(*[one() for _ in range(1000)])
    await client.close()
    try:
        ferry.aio.set_workers(4)  # too late: the pool runs
        resized = "resized"
    except ferry.FailedPreconditionError as e:
        resized = str(e)
    return {"records": sorted(set(records)), "most": max(most, threads()),
            "workers": ferry.aio.workers(), "resized": resized, "named": named("ferry-aio")}

print(json.dumps(asyncio.run(main())))
"""


def test_a_thousand_calls_on_at_most_ten_threads(small_flight):
    got = child(THREADS, small_flight)
    assert got["records"] == [(64 << 10) // 64]
    # The main thread, ferry.aio's one worker and the gRPC channel's own threads (7 or 8 on a
    # 2-core host): 9, sometimes 10.
    assert got["most"] <= 10, got
    assert got["workers"] == 1 and "already runs, with 1 worker" in got["resized"], got
    assert got["named"] == 1, got  # the worker bears its name (top, perf, a debugger)


TICKER = """
import asyncio, json, sys, time
import ferry.aio, ferry.flight

def run_delay():  # seconds this thread waited, runnable, for a CPU (0: the kernel does not say)
    try:
        with open("/proc/thread-self/schedstat") as f:
            return int(f.read().split()[1]) / 1e9
    except OSError:
        return 0.0

# Each tick: how late it woke, and how much of that the thread could have run (it was not
# waiting for a CPU that other threads held).
async def ticker(stop, late):
    while not stop.is_set():
        t, d = time.perf_counter(), run_delay()
        await asyncio.sleep(0.010)
        wall = time.perf_counter() - t - 0.010
        late.append((wall, wall - (run_delay() - d)))

async def ticking(work):
    stop, late = asyncio.Event(), []
    tick = asyncio.create_task(ticker(stop, late))
    await asyncio.sleep(0)
    start = time.perf_counter()
    result = await work()
    seconds = time.perf_counter() - start
    stop.set()
    await tick
    return result, seconds, late

async def main():
    async def nothing():
        await asyncio.sleep(float(sys.argv[2]))
    _, _, quiet = await ticking(nothing)  # the host's own lateness, nothing moving

    client = await ferry.aio.flight.connect(sys.argv[1])
    async def read():  # the GiB, again until 0.4 s have passed: enough ticks on a fast VM too
        rows, start = 0, time.perf_counter()
        while rows == 0 or time.perf_counter() - start < 0.4:
            async for batch in client.do_get("t", via="shm"):
                rows += len(batch)
        return rows
    rows, seconds, late = await ticking(read)
    await client.close()

    # The control: the blocking client read on the loop's thread, the whole GiB in one call.
    # (Two batches, 128 MiB, held it 24-60 ms with shared memory in 4 KiB pages, but under 5 ms
    # where shmem_enabled gives the server's segments huge pages.)
    blocking = ferry.flight.connect(sys.argv[1])
    async def read_blocking():
        stream = blocking.do_get("t", via="shm")
        stream.read_all()
        stream.close()
    _, _, control = await ticking(read_blocking)
    wall = sorted(w for w, _ in late)
    print(json.dumps({"rows": rows, "seconds": seconds, "ticks": len(late),
                      "max_late_ms": wall[-1] * 1e3, "median_late_ms": wall[len(wall) // 2] * 1e3,
                      "max_held_ms": max(h for _, h in late) * 1e3,
                      "quiet_max_late_ms": max(w for w, _ in quiet) * 1e3,
                      "control_max_held_ms": max(h for _, h in control) * 1e3}))

asyncio.run(main())
"""


def test_the_loop_keeps_its_period_while_a_gib_moves(gib_flight):
    # A read that held the loop would hold it in every run; a loaded machine's other processes
    # hold it in some (a thread that holds the GIL can itself wait for a CPU, which the loop's own
    # run delay below does not count), so the bound must hold in one of three runs.
    runs = []
    for _ in range(3):
        got = child(TICKER, gib_flight, "1.0")
        runs.append(got)
        # Whole GiBs, read long enough to measure; and a read that held the loop would have
        # shown: the control (the GiB read by the blocking client on the loop's thread) holds it
        # well past the 5 ms bound below. By how much depends on the VM's speed at the time, so
        # the margin asked is twice the bound.
        assert got["rows"] > 0 and got["rows"] * 64 % (BATCH_BYTES * BATCHES) == 0, got
        assert got["ticks"] >= 20, got
        assert got["control_max_held_ms"] > 10.0, got
        # A 10 ms ticker is at most 5 ms late while the GiB arrives, not counting the time the
        # kernel kept the loop's thread waiting for a CPU (/proc/thread-self/schedstat): other
        # processes on a loaded 2-core VM alone make it up to tens of ms late (the wall-clock
        # figures, quiet and loaded: docs/python.md).
        if got["max_held_ms"] <= 5.0:
            return
    raise AssertionError(f"the loop was held over 5 ms in each of three runs: {runs}")


FORK = """
import asyncio, json, os, sys, time
import pyarrow as pa
import ferry.aio, ferry.dipc

async def rows(uri):
    return sum([len(b) async for b in ferry.aio.dipc.connect(uri, "d")])

with ferry.dipc.Server.start("shm") as server:
    server.add("d", [pa.record_batch({"x": pa.array(range(1000))})] * 3)
    before = asyncio.run(rows(server.uri))  # the pool runs now
    pid = os.fork()
    if pid == 0:  # the child has none of the pool's threads: it must start its own
        os._exit(0 if asyncio.run(asyncio.wait_for(rows(server.uri), 20)) == 3000 else 1)
    deadline = time.monotonic() + 30
    while (done := os.waitpid(pid, os.WNOHANG))[0] == 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    if done[0] == 0:
        os.kill(pid, 9)
    print(json.dumps({"before": before, "child": os.waitstatus_to_exitcode(done[1])
                      if done[0] else "hung"}))
"""


def test_a_forked_child_starts_its_own_pool():
    assert child(FORK) == {"before": 3000, "child": 0}

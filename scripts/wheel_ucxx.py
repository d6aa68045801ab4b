"""ferry and ucxx in one process, each sending a UCX message (scripts/test_without_apt.sh runs it in the
wheel's environment after installing ucxx-cu12): both load PyPI's libucx, the process maps one
libucp, and both work on it. argv[1] is the UCX version pip installed with ucxx."""
import asyncio
import sys

import numpy as np
import pyarrow as pa

import ferry
import ucxx

want_ucx = sys.argv[1]


async def ucxx_message():
    """One 16-byte message through a ucxx listener and endpoint on loopback."""
    got = []

    async def handler(ep):
        buf = np.empty(16, dtype=np.uint8)
        await ep.recv(buf)
        got.append(bytes(buf))
        await ep.close()

    listener = ucxx.create_listener(handler)
    ep = await ucxx.create_endpoint("127.0.0.1", listener.port)
    await ep.send(np.frombuffer(b"hello from ucxx!", dtype=np.uint8))
    for _ in range(200):
        if got:
            break
        await asyncio.sleep(0.05)
    await ep.close()
    listener.close()
    return got


assert ucxx.get_ucx_version() == tuple(int(p) for p in want_ucx.split(".")), ucxx.get_ucx_version()
assert asyncio.run(ucxx_message()) == [b"hello from ucxx!"]
print(f"wheel ucxx: ucxx sent a message over UCX {want_ucx}")

table = pa.table({"x": pa.array(range(10_000), pa.int64()), "s": pa.array([str(i) for i in range(10_000)])})
with ferry.dipc.Server.start("ucx") as server:
    server.add("t", table.to_batches(max_chunksize=2_500))
    got = pa.RecordBatchReader.from_stream(ferry.dipc.connect(server.uri, "t")).read_all()
assert got.equals(table)
ucx = ferry.dipc.loaded_ucx()
assert ucx["loaded"] == want_ucx, ucx
with open("/proc/self/maps") as f:
    mapped = {line.split()[-1] for line in f if "libucp.so" in line}
assert len(mapped) == 1, f"two libucp in one process: {mapped}"
print(f"wheel ucxx: ferry served and read a table over UCX in the same process; one libucp: {mapped.pop()}")

"""bench/cluster/tcp_peer.py: the plain TCP peer of bench/cluster/cluster_bench.py, what any
reader could reach between its hosts: servers that send bytes over sockets and a reader that
receives them, with no UCX, no Arrow and no ferry."""
import subprocess
import sys
import time

# The plain TCP peer: no UCX, no Arrow, no ferry. A server on a host sends argv[2] bytes from one
# buffer to each client that connects; the reader on host c connects to every server at once, a
# thread each, receives into one reused buffer per stream, and prints the best run's seconds (of
# argv[3] after a warm-up; with argv[3] "paced", "ready" after the warm-up and then one run's
# seconds for each line on its standard input). It bounds every reader here: none moves the
# bytes with less work.
# With argv[4] "keep" it receives each stream into memory of the stream's whole size instead, as a
# reader that keeps what it reads (a table) must: allocated and written once before the runs and
# reused by each, as ferry's client reuses its receive buffers, so no run maps fresh pages, but
# each writes every byte to its own place rather than over one buffer that stays in cache.
TCP_SERVER = """
import socket, sys
total, chunk = int(sys.argv[2]), 8 << 20
data = memoryview(bytearray(chunk))
s = socket.create_server((sys.argv[1], 13338))
while True:
    c, _ = s.accept()
    left = total
    while left:
        left -= c.send(data[:min(chunk, left)])
    c.close()
"""

# The same server sending from memory of the stream's whole size, written once before it
# listens, so that each byte sent is read from its own place (as a server of a kept dataset
# reads it), not from one buffer that stays in cache.
TCP_COLD_SERVER = """
import socket, sys
total, chunk = int(sys.argv[2]), 8 << 20
data = memoryview(bytearray(total))
for i in range(0, total, 4096):
    data[i] = 1
s = socket.create_server((sys.argv[1], 13338))
while True:
    c, _ = s.accept()
    at = 0
    while at < total:
        at += c.send(data[at:min(at + chunk, total)])
    c.close()
"""

TCP_READER = """
import socket, sys, threading, time
total, chunk = int(sys.argv[2]), 8 << 20
keep = len(sys.argv) > 4 and sys.argv[4] == "keep"
kept = {ip: memoryview(bytearray(total if keep else chunk)) for ip in sys.argv[1].split(",")}
def read(ip):
    buf = kept[ip]
    with socket.create_connection((ip, 13338)) as c:
        left = total
        while left:
            at = total - left if keep else 0
            n = c.recv_into(buf[at:], min(chunk, left))
            if n == 0:
                raise SystemExit("the server closed early")
            left -= n
def run():
    start = time.monotonic()
    threads = [threading.Thread(target=read, args=(ip,)) for ip in sys.argv[1].split(",")]
    for t in threads: t.start()
    for t in threads: t.join()
    return time.monotonic() - start
if sys.argv[3] == "paced":
    run()
    print("ready", flush=True)
    for _ in sys.stdin:
        print(run(), flush=True)
else:
    runs = [run() for _ in range(int(sys.argv[3]) + 1)]
    print(min(runs[1:]))
"""


def tcp_streams(hosts, per_server, repeat, names=("a", "b"), keep=False, cold=False):
    """Plain TCP streams, `per_server` bytes from each of `names` at once into one process on
    host c (into memory it keeps, with `keep`; sent from memory of the stream's size, with
    `cold`): the aggregate MiB/s of the best run."""
    server = TCP_COLD_SERVER if cold else TCP_SERVER
    servers = [hosts[n].popen([sys.executable, "-c", server, hosts[n].ip, str(per_server)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
               for n in names]
    try:
        time.sleep(1)
        r = hosts["c"].run([sys.executable, "-c", TCP_READER,
                            ",".join(hosts[n].ip for n in names), str(per_server), str(repeat),
                            "keep" if keep else "reuse"],
                           capture_output=True, text=True, timeout=600)
        if r.returncode != 0:
            raise RuntimeError(f"tcp reader: exit {r.returncode}: {r.stderr}")
        return per_server * len(names) / float(r.stdout) / (1 << 20)
    finally:
        for s in servers:
            s.kill()
            s.wait()

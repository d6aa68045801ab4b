#!/usr/bin/env python3
"""The Python peers of bench/dipc/small_batches: one producer process, one consumer (this one),
small record batches from the one to the other, timed.

    small_batches_peers.py PEER --rows R --batches N [--rate HZ] [--warmup W] [--prebuilt]

Every peer moves N batches of R rows: `x` int64 (i; row 0 overwritten by the producer's stamp),
`f` float64 (i * 0.5) and `s` utf8 ("v{i % 1000}"), no nulls, as the C++ side builds them.
The producer is a child process (this script with a hidden `--serve` role), started, wired up and
made ready before the clock starts; the consumer checks it got exactly N batches of R rows and that
the last one's `f` equals the template's.

- pyarrow_socket: pyarrow's IPC stream over a Unix socket. The producer writes the stream with
  `pa.ipc.new_stream(sock.makefile("wb"), schema)` (flushed after each batch when paced); the
  consumer reads it with `pa.ipc.open_stream`.
- pyarrow_flight: pyarrow.flight's own server (a `GeneratorStream` making stamped batches) and
  client (`do_get`, then `read_chunk` per batch), over gRPC on 127.0.0.1. With `--prebuilt` the
  server serves N pre-built batches instead (a `RecordBatchStream` of a table), for a throughput
  comparison with ferry_flight; it then cannot stamp.
- ferry_flight: ferry's Flight server (`ferry.flight.Server`, gRPC plane only) serving N pre-built
  batches, read by pyarrow.flight's client with DoGet. `Server.add` reads its producer to the end
  when the flight is added, so batches cannot be stamped live: no latency.
- iceoryx2: iceoryx2's publish-subscribe over shared memory (the PyPI binding). Each sample is an
  8-byte stamp followed by the batch's Arrow IPC message (the template's, serialised once and
  copied into each loaned sample); the publisher notifies an event service after each send and the
  subscriber blocks on it (`Listener.timed_wait`, no busy spin), then decodes each sample into a
  pyarrow RecordBatch without copying. With the subscriber's queue full the publisher retries
  (iceoryx2's RetryUntilDelivered), so nothing is dropped.

Timing: `seconds` runs from the consumer's first request (after connect and wire-up, which are
excluded) to the end of the stream. Latency is one way: `time.monotonic_ns()` (CLOCK_MONOTONIC,
the clock of the C++ side's steady_clock) is written into the batch just before the producer hands
it over, and read again when the consumer holds the decoded batch; p50, p99 and p99.9 over the
batches after the first W (default min(100, N // 10)). With `--rate HZ` the producer writes batch i
at start + i / HZ (sleeping, with the timer slack lowered to 1 ns), so latency carries no queueing
as long as both ends keep up (`batches_per_s` says the rate reached); with rate 0 it writes as fast
as it can and latency includes the queue. `batch_bytes` is the batch's buffer bytes (pyarrow's
`nbytes`), for iceoryx2 the sample's payload (stamp and IPC message).

Limits: both ends are Python, so every figure includes the interpreter's own per-batch cost (the
stamp, the decode into a pyarrow object, the bookkeeping; more when a paced consumer wakes cold):
these are what a Python user of each library gets, not the library's native floor. pyarrow's
socket reader makes several reads through a Python file object per batch. iceoryx2's Python
binding adds its own per-sample overhead (PyO3 calls to loan, send, notify and receive, ctypes for
the payload), so its figure is an upper bound on iceoryx2's native cost. For scale: on the 2-core
VM a bare Python pipe, paced at 1-20 kHz, wakes its reader in about 5 µs (p50).

Output: one JSON line, {"peer", "rows", "batches", "rate", "seconds", "batches_per_s",
"batch_bytes", "latency_ns": {"p50", "p99", "p999"} or null, "note", "prebuilt"}. A missing
dependency prints `skip: REASON` and exits with status 3; any failure exits non-zero naming it.
"""
import argparse
import ctypes
import json
import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

try:
    import numpy as np
    import pyarrow as pa
except ImportError as e:  # pragma: no cover
    print(f"skip: pyarrow (and numpy) are needed: {e}", flush=True)
    sys.exit(3)

PEERS = ("pyarrow_socket", "pyarrow_flight", "ferry_flight", "flight_replay", "iceoryx2")
SCHEMA = pa.schema([("x", pa.int64()), ("f", pa.float64()), ("s", pa.string())])
FLIGHT = "small"  # the flight's name (and pyarrow's ticket)
ICEORYX2_QUEUE = 64  # samples the subscriber's queue holds before the publisher must retry


class Skip(Exception):
    """A dependency is missing: printed as `skip: ...`, exit status 3."""


def template_batch(rows):
    """The batch every peer sends, built once: x = i, f = i * 0.5, s = "v{i % 1000}"."""
    i = np.arange(rows, dtype=np.int64)
    words = pa.array([f"v{j}" for j in range(1000)], pa.string())
    return pa.RecordBatch.from_arrays([pa.array(i), pa.array(i * 0.5), words.take(i % 1000)],
                                      schema=SCHEMA)


def restamped(template):
    """A batch whose `x` is a fresh NumPy copy of the template's (pyarrow wraps it without copying),
    and that copy: writing x[0] stamps the batch. About 5 µs for 1,000 rows, against 0.1 µs to
    restamp one reused batch; used where the transport may still read a batch after taking it."""
    x = template.column(0).to_numpy().copy()
    batch = pa.RecordBatch.from_arrays([pa.array(x), template.column(1), template.column(2)],
                                       schema=SCHEMA)
    return batch, x


class Pacer:
    """Holds batch i until start + i / rate (rate 0: never); sleeps, never spins."""

    def __init__(self, rate):
        self.rate, self.start = rate, None
        if rate > 0:
            # The default 50 µs timer slack would make every sleep overshoot a 50 µs period.
            ctypes.CDLL(None, use_errno=True).prctl(29, 1, 0, 0, 0)  # PR_SET_TIMERSLACK, 1 ns

    def wait(self, i):
        if self.rate <= 0:
            return
        if self.start is None:
            self.start = time.monotonic_ns()
        delay = self.start + round(i * 1e9 / self.rate) - time.monotonic_ns()
        if delay > 0:
            time.sleep(delay / 1e9)


def stdin_line(timeout):
    """The next line from the parent (b"" at end of file), or TimeoutError after `timeout` s."""
    ready, _, _ = select.select([sys.stdin.buffer], [], [], timeout)
    if not ready:
        raise TimeoutError(f"no word from the consumer within {timeout:g} s")
    return sys.stdin.buffer.readline()


def ready(address):
    print(f"ready {address}", flush=True)


# --- producers: the child process, `--serve PEER` ----------------------------------------------


def serve_socket(a, template):
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(a.address)
    listener.listen(1)
    listener.settimeout(a.timeout)
    ready(a.address)
    conn, _ = listener.accept()
    conn.settimeout(a.timeout)
    if conn.recv(1) != b"g":
        raise RuntimeError("the consumer closed the socket before asking for the stream")
    # write_batch returns once the bytes are in the kernel or in the file's own buffer (both
    # copies), so one batch restamped in place is safe here and costs nothing per batch.
    batch, x = restamped(template)
    pacer = Pacer(a.rate)
    with conn, conn.makefile("wb") as f, pa.ipc.new_stream(f, SCHEMA) as writer:
        for i in range(a.batches):
            pacer.wait(i)
            x[0] = time.monotonic_ns()
            writer.write_batch(batch)
            if a.rate > 0:
                f.flush()


def serve_pyarrow_flight(a, template):
    import pyarrow.flight as fl

    class Server(fl.FlightServerBase):
        def get_flight_info(self, context, descriptor):
            endpoint = fl.FlightEndpoint(FLIGHT.encode(), [])
            return fl.FlightInfo(SCHEMA, descriptor, [endpoint], a.batches * a.rows, -1)

        def do_get(self, context, ticket):
            if a.prebuilt:
                return fl.RecordBatchStream(pa.Table.from_batches([template] * a.batches))
            return fl.GeneratorStream(SCHEMA, live())

    def live():
        # gRPC may still hold a batch's buffers (zero-copy slices) after the generator moved on,
        # so each batch gets its own x, made before the pacer's wait and the stamp.
        pacer = Pacer(a.rate)
        for i in range(a.batches):
            batch, x = restamped(template)
            pacer.wait(i)
            x[0] = time.monotonic_ns()
            yield batch

    server = Server("grpc://127.0.0.1:0")
    try:
        ready(f"grpc://127.0.0.1:{server.port}")
        stdin_line(a.timeout)  # serve until the consumer is done (end of file) or gone
    finally:
        server.shutdown()


def serve_ferry_flight(a, template):
    import ferry.flight

    server = ferry.flight.Server.start("127.0.0.1:0", planes=[])
    try:
        server.add(FLIGHT, [template] * a.batches)
        ready(server.uri)
        stdin_line(a.timeout)
    finally:
        server.stop()


def flight_data(message):
    """A pyarrow.ipc.Message as the bytes of a Flight `FlightData` protobuf, encoded here by hand:
    data_header (field 2) the message's flatbuffer, data_body (field 1000) its body."""
    def field(number, payload):
        key, size, out = (number << 3) | 2, len(payload), bytearray()
        for v in (key, size):
            while v >= 0x80:
                out.append((v & 0x7F) | 0x80)
                v >>= 7
            out.append(v)
        return bytes(out) + payload

    header = field(2, message.metadata.to_pybytes())
    return header + (field(1000, message.body.to_pybytes()) if message.body.size else b"")


def serve_flight_replay(a, template):
    """The limit of a Flight server to this client: bench/flight/flight_replay.cpp answers
    GetFlightInfo and DoGet with bytes made here beforehand, and does no Flight work per batch."""
    import pyarrow.flight as fl

    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, SCHEMA) as writer:
        writer.write_batch(template)
    schema_message, batch_message = list(pa.ipc.MessageReader.open_stream(sink.getvalue()))
    info = fl.FlightInfo(SCHEMA, fl.FlightDescriptor.for_path(FLIGHT),
                         [fl.FlightEndpoint(FLIGHT.encode(), [])], a.batches * a.rows, -1)
    files = []
    for name, data in (("info", info.serialize()), ("schema", flight_data(schema_message)),
                       ("batch", flight_data(batch_message))):
        files.append(os.path.join(a.address, name))
        with open(files[-1], "wb") as f:
            f.write(data)
    server = subprocess.Popen([a.replay, *files, str(a.batches)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    try:
        ready(server.stdout.readline().strip())
        stdin_line(a.timeout)
    finally:
        server.stdin.close()
        try:
            server.wait(3)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
            raise RuntimeError("ferry_flight_replay did not end within 3 s of its stdin closing")


def serve_iceoryx2(a, template):
    import iceoryx2 as iox2

    iox2.set_log_level(iox2.LogLevel.Error)
    node = iox2.NodeBuilder.new().create(iox2.ServiceType.Ipc)
    service = (node.service_builder(iox2.ServiceName.new(a.address))
               .publish_subscribe(iox2.Slice[ctypes.c_uint8])
               .max_publishers(1).max_subscribers(1).history_size(0)
               .subscriber_max_buffer_size(ICEORYX2_QUEUE).enable_safe_overflow(False).create())
    message = template.serialize()
    blob = np.zeros(8 + message.size, dtype=np.uint8)
    blob[8:] = np.frombuffer(message, dtype=np.uint8)
    size, blob_at = blob.size, blob.ctypes.data
    publisher = (service.publisher_builder().initial_max_slice_len(size)
                 .backpressure_strategy(iox2.BackpressureStrategy.RetryUntilDelivered).create())
    events = node.service_builder(iox2.ServiceName.new(a.address + "/sent")).event().create()
    notifier = events.notifier_builder().create()
    ready(size)
    if stdin_line(a.timeout).strip() != b"go":
        raise RuntimeError("the subscriber did not say go")
    pacer = Pacer(a.rate)
    for i in range(a.batches):
        pacer.wait(i)
        sample = publisher.loan_slice_uninit(size)
        ctypes.memmove(sample.payload_ptr, blob_at, size)
        ctypes.c_int64.from_address(sample.payload_ptr).value = time.monotonic_ns()
        sample.assume_init().send()
        notifier.notify()
    stdin_line(a.timeout)  # the samples live in this process's segment: stay until read


SERVE = {"pyarrow_socket": serve_socket, "pyarrow_flight": serve_pyarrow_flight,
         "ferry_flight": serve_ferry_flight, "flight_replay": serve_flight_replay,
         "iceoryx2": serve_iceoryx2}


# --- the consumer: this process -----------------------------------------------------------------


class Child:
    """The producer: this script in its `--serve` role, killed and reaped when the run ends."""

    def __init__(self, a, address):
        args = [sys.executable, os.path.abspath(__file__), a.peer, "--serve", "--rows", str(a.rows),
                "--batches", str(a.batches), "--rate", repr(a.rate), "--address", address,
                "--timeout", repr(a.timeout)] + (["--prebuilt"] if a.prebuilt else []) + \
            (["--replay", a.replay] if a.replay else [])
        self.peer = a.peer
        self.proc = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE)

    def ready(self, timeout):
        """What the producer's `ready` line says (its address), once it is serving."""
        r, _, _ = select.select([self.proc.stdout], [], [], timeout)
        line = self.proc.stdout.readline().decode() if r else ""
        if not line.startswith("ready "):
            self.proc.poll()
            raise RuntimeError(f"the {self.peer} producer did not start within {timeout:g} s "
                               f"(exit status {self.proc.returncode}, said {line!r})")
        return line.split(" ", 1)[1].strip()

    def say(self, word):
        self.proc.stdin.write(word + b"\n")
        self.proc.stdin.flush()

    def kill(self):
        self.proc.kill()

    def close(self, wait=5.0):
        """End of file on its stdin (done), then a bounded wait; killed if still there."""
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        try:
            self.proc.wait(wait)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.proc.stdout.close()
        return self.proc.returncode


class Tally:
    """What the consumer saw: each batch's one-way latency, its rows, and the last batch's `f`."""

    def __init__(self, a):
        self.a, self.count, self.latencies, self.f_ok = a, 0, np.zeros(a.batches, np.int64), None

    def add(self, now, stamp, batch):
        if batch.num_rows != self.a.rows:
            raise AssertionError(f"batch {self.count} has {batch.num_rows} rows, not {self.a.rows}")
        if self.count < self.a.batches:
            self.latencies[self.count] = now - stamp
        self.count += 1
        if self.count == self.a.batches:
            self.f_ok = batch.column(1).equals(self.a.template.column(1))

    def check(self):
        if self.count != self.a.batches:
            raise AssertionError(f"received {self.count} batches, not {self.a.batches}")
        if not self.f_ok:
            raise AssertionError("the last batch's column f differs from the template's")


def consume_socket(a, child, tally):
    path = child.ready(a.timeout)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(a.timeout)
    sock.connect(path)
    with sock, sock.makefile("rb") as f:
        start = time.monotonic_ns()
        sock.sendall(b"g")
        for batch in pa.ipc.open_stream(f):
            tally.add(time.monotonic_ns(), batch.column(0)[0].as_py(), batch)
        end = time.monotonic_ns()
    return end - start, "pyarrow IPC stream over a Unix socket (pa.ipc.new_stream / open_stream)"


def consume_flight(a, child, tally):
    import pyarrow.flight as fl

    client = fl.connect(child.ready(a.timeout))
    options = fl.FlightCallOptions(timeout=a.timeout)
    info = client.get_flight_info(fl.FlightDescriptor.for_path(FLIGHT), options)
    start = time.monotonic_ns()
    reader = client.do_get(info.endpoints[0].ticket, options)
    while True:
        try:
            batch = reader.read_chunk().data
        except StopIteration:
            break
        tally.add(time.monotonic_ns(), batch.column(0)[0].as_py(), batch)
    end = time.monotonic_ns()
    client.close()
    server = {"ferry_flight": "ferry's Flight server (gRPC plane)",
              "flight_replay": "bench/flight/flight_replay.cpp (FlightData made beforehand)"
              }.get(a.peer, "pyarrow.flight's server")
    note = f"{server} -> pyarrow.flight client, DoGet over gRPC on 127.0.0.1"
    if a.peer == "flight_replay":
        note += "; no Flight work per batch: the limit of a server to this client"
    elif a.peer == "ferry_flight":
        note += ("; N pre-built batches: ferry's Server.add reads a producer to its end when the "
                 "flight is added, so batches cannot be stamped live (no latency)")
    elif a.prebuilt:
        note += "; N pre-built batches (a RecordBatchStream of a table): no latency"
    else:
        note += "; live GeneratorStream, each batch with its own x (stamp before the yield)"
    return end - start, note


def consume_iceoryx2(a, child, tally):
    import iceoryx2 as iox2

    iox2.set_log_level(iox2.LogLevel.Error)
    size = int(child.ready(a.timeout))
    tally.batch_bytes = size
    node = iox2.NodeBuilder.new().create(iox2.ServiceType.Ipc)
    service = (node.service_builder(iox2.ServiceName.new(a.address))
               .publish_subscribe(iox2.Slice[ctypes.c_uint8]).open())
    subscriber = service.subscriber_builder().buffer_size(ICEORYX2_QUEUE).create()
    events = node.service_builder(iox2.ServiceName.new(a.address + "/sent")).event().open()
    listener = events.listener_builder().create()
    deadline = time.monotonic() + a.timeout
    start = time.monotonic_ns()
    child.say(b"go")
    while tally.count < a.batches:
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError(f"iceoryx2: {tally.count} of {a.batches} samples in {a.timeout} s")
        listener.timed_wait(iox2.Duration.from_secs_f64(min(left, 1.0)))
        while (sample := subscriber.receive()) is not None:
            at = sample.payload_ptr
            if sample.header.number_of_elements != size:
                raise AssertionError(f"a sample of {sample.header.number_of_elements} bytes")
            body = pa.foreign_buffer(at + 8, size - 8, base=sample)
            batch = pa.ipc.read_record_batch(body, SCHEMA)
            tally.add(time.monotonic_ns(), ctypes.c_int64.from_address(at).value, batch)
            del batch, body
            sample.delete()
    end = time.monotonic_ns()
    note = (f"iceoryx2 {iox2_version()} publish-subscribe (Python binding), payload = 8-byte stamp "
            "+ the batch's Arrow IPC message, decoded zero-copy; the subscriber blocks on an event "
            "notified per sample (no busy spin); the Python binding adds its own per-sample "
            "overhead, so this is an upper bound on iceoryx2's native cost")
    return end - start, note


def iox2_version():
    from importlib.metadata import version

    return version("iceoryx2")


CONSUME = {"pyarrow_socket": consume_socket, "pyarrow_flight": consume_flight,
           "ferry_flight": consume_flight, "flight_replay": consume_flight,
           "iceoryx2": consume_iceoryx2}


def require(peer):
    """Raises Skip when a library the peer needs is not importable."""
    needs = {"pyarrow_flight": ["pyarrow.flight"], "iceoryx2": ["iceoryx2"],
             "ferry_flight": ["pyarrow.flight", "ferry.flight"],
             "flight_replay": ["pyarrow.flight"]}.get(peer, [])
    for module in needs:
        try:
            __import__(module)
        except ImportError as e:
            raise Skip(f"{peer} needs {module}: {e}") from e


def percentiles(latencies, warmup):
    v = latencies[warmup:]
    if not v.size:
        return None
    p50, p99, p999 = np.percentile(v, [50, 99, 99.9])
    return {"p50": int(p50), "p99": int(p99), "p999": int(p999)}


def run(a):
    require(a.peer)
    a.template = template_batch(a.rows)
    tmp = tempfile.mkdtemp(prefix="ferry-sb-")
    a.address = (os.path.join(tmp, "sock") if a.peer == "pyarrow_socket"
                 else tmp if a.peer == "flight_replay"
                 else f"ferry/small_batches/{os.getpid()}-{time.monotonic_ns()}")
    tally = Tally(a)
    tally.batch_bytes = a.template.nbytes
    child = Child(a, a.address)
    # The whole run is bounded: past the timeout the producer is killed, which ends the
    # consumer's reads, and if the consumer is still stuck this process exits. (No SIGALRM
    # handler: iceoryx2's wait swallows the interruption and the handler would run later, in
    # the clean-up.)
    watchdog = threading.Timer(a.timeout, expire, (a, child))
    watchdog.daemon = True
    watchdog.start()
    failed = True
    try:
        ns, note = CONSUME[a.peer](a, child, tally)
        tally.check()
        failed = False
    finally:
        watchdog.cancel()
        status = child.close(wait=1.0 if failed else 5.0)
        shutil.rmtree(tmp)  # pyarrow_socket's socket, flight_replay's replies
    if status != 0:
        raise RuntimeError(f"the {a.peer} producer exited with status {status}")
    stamped = a.peer not in ("ferry_flight", "flight_replay") and not a.prebuilt
    if not stamped and a.rate > 0:
        note += "; --rate does not apply to pre-built batches: they go as fast as they can"
    seconds = ns / 1e9
    return {"peer": a.peer, "rows": a.rows, "batches": a.batches,
            "rate": int(a.rate) if float(a.rate).is_integer() else a.rate, "seconds": seconds,
            "batches_per_s": a.batches / seconds, "batch_bytes": tally.batch_bytes,
            "latency_ns": percentiles(tally.latencies, a.warmup) if stamped else None,
            "note": note,
            "prebuilt": a.prebuilt or a.peer in ("ferry_flight", "flight_replay")}


def expire(a, child):
    print(f"{a.peer}: no result within {a.timeout:g} s: the producer is killed", file=sys.stderr,
          flush=True)
    child.kill()
    time.sleep(5)  # time for the consumer to fail on its own and clean up
    os._exit(1)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("peer", choices=PEERS)
    p.add_argument("--rows", type=int, default=1000)
    p.add_argument("--batches", type=int, default=20000)
    p.add_argument("--rate", type=float, default=0.0,
                   help="batches a second the producer paces itself to (0: as fast as it can)")
    p.add_argument("--warmup", type=int, help="batches left out of latency (min(100, N // 10))")
    p.add_argument("--prebuilt", action="store_true",
                   help="pyarrow_flight: serve N pre-built batches, as ferry_flight does")
    p.add_argument("--timeout", type=float, default=60.0, help="seconds for the whole run")
    p.add_argument("--replay", help="flight_replay: the path of ferry_flight_replay")
    p.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--address", help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.rows < 1 or a.batches < 1 or a.rate < 0 or a.timeout <= 0:
        p.error("--rows and --batches must be >= 1, --rate >= 0 and --timeout > 0")
    if a.prebuilt and a.peer != "pyarrow_flight":
        p.error("--prebuilt is for pyarrow_flight (ferry_flight is always pre-built)")
    if a.peer == "flight_replay" and not a.replay:
        p.error("flight_replay needs --replay (the path of ferry_flight_replay)")
    if a.warmup is None:
        a.warmup = min(100, a.batches // 10)
    if a.serve:
        # A producer whose consumer is gone ends too: SIGALRM's default action ends the process.
        signal.signal(signal.SIGALRM, signal.SIG_DFL)
        signal.setitimer(signal.ITIMER_REAL, a.timeout + 5)
        SERVE[a.peer](a, template_batch(a.rows))
        return 0
    try:
        result = run(a)
    except Skip as e:
        print(f"skip: {e}", flush=True)
        return 3
    except Exception as e:
        print(f"{a.peer}: failed: {type(e).__name__}: {e}", file=sys.stderr, flush=True)
        return 1
    print(json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

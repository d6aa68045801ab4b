"""One client's link to its event loop: the futures of its jobs in flight, resolved from its
completion queue's eventfd; and AsyncStream, the `async for` over a stream read on the pool."""
import asyncio
import os
import time

from ferry._ferry import _aio


class Dispatcher:
    """The completion queue of one client on the event loop it was made on. submit() starts a
    job and returns its future; the loop's reader callback drains the queue and resolves them."""

    def __init__(self, loop):
        self._loop = loop
        self._queue = _aio.Completions()
        self._futures = {}
        self._next = 0
        self._fd = self._queue.fd
        loop.add_reader(self._fd, self._drain)
        self.closed = False

    @property
    def queue(self):
        return self._queue

    def submit(self, start, *args):
        """Call start(..., id, *args), which queues a job on the pool, and return its future.
        start is a bound C++ method or a function taking (queue, id, ...)."""
        if self.closed:
            raise RuntimeError("ferry.aio: the client is closed")
        if asyncio.get_running_loop() is not self._loop:
            raise RuntimeError("ferry.aio: a client is used from the event loop it was made on only")
        job = self._next
        self._next += 1
        future = self._loop.create_future()
        self._futures[job] = future
        try:
            start(job, *args)
        except BaseException:
            del self._futures[job]
            raise
        return future

    def _drain(self):
        for job, ok, value in self._queue.drain():
            future = self._futures.pop(job, None)
            if future is None or future.done():  # cancelled: nobody takes the result
                _discard(value)
            elif ok:
                future.set_result(value)
            else:
                future.set_exception(value)
        if self.closed and not self._futures:
            self._loop.remove_reader(self._fd)

    def close(self):
        """Cancel what is in flight. The eventfd stays watched until those jobs have finished
        on the pool, so that what they made (a stream, a batch) is released at once."""
        if self.closed:
            return
        self.closed = True
        for future in self._futures.values():
            future.cancel()
        if not self._futures:
            self._loop.remove_reader(self._fd)


def _discard(value):
    if isinstance(value, _aio.Stream):
        value.close()


#: Give this thread's core to another thread that is ready to run there, if any (a system call
#: that returns at once when none is).
_sched_yield = getattr(os, "sched_yield", lambda: None)

#: The longest a stream handing out batches read ahead keeps the loop before it yields (seconds):
#: a batch already read is taken without a trip through the loop until then.
HOLD = 0.001


class AsyncStream:
    """A stream of record batches (ferry.Array) read with `async for`; the worker pool reads up
    to four batches ahead. Cancelling the task that awaits a batch, aclose(), leaving `async with` or
    dropping the stream closes it, which ends the server's session and frees what it lent.
    spin_us: how long a step whose batch is still being read looks for it, yielding to the loop
    between looks, before it waits on the eventfd (0: wait at once)."""

    def __init__(self, dispatcher, opening, owns_dispatcher, spin_us=0):
        self._dispatcher = dispatcher
        self._opening = opening
        self._owns = owns_dispatcher
        self._spin = max(0, spin_us) * 1e-6
        self._stream = None
        self._done = False
        self._yielded = 0.0  # time.perf_counter() when this stream last let the loop run

    @property
    def schema(self):
        """The stream's ferry.Schema, once open (await open()); None before."""
        return None if self._stream is None else self._stream.schema

    @property
    def location(self):
        """The URI the stream reads from, once open; None before."""
        return None if self._stream is None else self._stream.location

    async def open(self):
        """Wait until the stream is open (its schema has arrived); returns the stream."""
        if self._stream is None:
            if self._done:
                raise ValueError("the stream is closed")
            try:
                self._stream = await self._opening
            except BaseException:
                self._finish()
                raise
        return self

    def __aiter__(self):
        return self

    async def __anext__(self):
        if self._done:
            raise StopAsyncIteration
        if self._stream is None:
            await self.open()
        try:
            ready, batch = self._stream.take_ready()
            if not ready:
                ready, batch = await self._look()
            if ready:  # read ahead: taken at once; the loop runs at least every HOLD seconds
                if time.perf_counter() - self._yielded > HOLD:
                    await asyncio.sleep(0)
                    self._yielded = time.perf_counter()
            else:
                batch = await self._dispatcher.submit(self._stream.read_next,
                                                      self._dispatcher.queue)
                self._yielded = time.perf_counter()
        except BaseException:  # cancelled, or the read failed: the stream is over
            self._finish()
            raise
        if batch is None:
            self._finish()
            raise StopAsyncIteration
        return batch

    async def _look(self):
        """Look for the batch being read for up to the spin, letting the loop run between looks:
        a batch that lands within it costs no wake-up of the loop through the eventfd."""
        if self._spin <= 0:
            return False, None
        end = time.perf_counter() + self._spin
        while True:
            # The worker reading the batch may share this thread's core: a look that kept the
            # core would hold it off until the look gave up and slept (then every batch of the
            # stream came a round trip apart, about 75 us, where they come 1-5 us apart).
            _sched_yield()
            await asyncio.sleep(0)
            now = time.perf_counter()
            self._yielded = now
            ready, batch = self._stream.take_ready()
            if ready or now >= end:
                return ready, batch

    async def read_all(self):
        """Every remaining batch, as a list."""
        return [batch async for batch in self]

    def _finish(self):
        if self._done:
            return
        self._done = True
        if self._stream is not None:
            self._stream.close()
        elif not self._opening.done():
            self._opening.cancel()  # its stream is closed when it arrives
        # A failed open's exception refers back here through its traceback: without the future
        # that holds it, no cycle keeps the client (and its connection) alive until collected.
        self._opening = None
        if self._owns:
            self._dispatcher.close()

    async def aclose(self):
        """Close the stream now (idempotent)."""
        self._finish()

    def close(self):
        """Close the stream now (idempotent); for code that cannot await."""
        self._finish()

    async def __aenter__(self):
        return await self.open()

    async def __aexit__(self, *exc):
        self._finish()

    def __del__(self):
        try:
            self._finish()
        except Exception:  # a loop already closed at exit: the C++ stream closes with its owner
            pass

"""CUDA interop from Python on a GPU (the stand-in driver under scripts/test.sh): DLPack's `stream`
both ways, the CUDA Array Interface's `stream` both ways, device capsules and ferry's DLPack
exchange table, each checked against an independent producer or consumer (cuda_raw: the raw driver
through ctypes) and against pyarrow.
A gated stream holds the producer's work back, so a read that skips the protocol's wait sees the
old bytes; the stand-in's counters show that no step makes the host wait."""
import ctypes
import gc
import os
import threading
import time

import numpy as np
import pyarrow as pa
import pytest

pytest.importorskip("ferry._ferry", reason="the ferry binding is not installed (pip install ./python)")
import ferry  # noqa: E402

from cuda_raw import Driver, Gate, Producer  # noqa: E402
from dlpack_ctypes import export, kDLCUDA, table  # noqa: E402

OLD = bytes(16)
NEW = Producer.values.tobytes()


def _required(name):
    return name in os.environ.get("FERRY_REQUIRE_DEVICES", "").split(",")


@pytest.fixture(scope="module")
def gpu():
    try:
        return ferry.Device.resolve(ferry.DeviceType.CUDA, 0)
    except ValueError as e:
        if _required("CUDA0"):
            pytest.fail(f"CUDA0 is required ($FERRY_REQUIRE_DEVICES) but: {e}")
        pytest.skip(f"no CUDA0 device on this machine: {e}")


@pytest.fixture(scope="module")
def cu(gpu):
    return Driver()


@pytest.fixture(autouse=True)
def gives_everything_back(cu, gpu):
    """On the stand-in, every test ends holding what it started with: allocations, streams,
    events, IPC mappings and context retains (the producers' own are freed first, and ferry's
    reusable staging blocks released). On a GPU the driver has no such counts."""
    if cu.standin is None:
        yield
        return
    cuda = [d for d in ferry.devices() if d.device_type == ferry.DeviceType.CUDA]
    for device in cuda:
        device.release_cached()  # also makes ferry's per-GPU context and stream, once
    before, mark = cu.live(), cu.mark()
    yield
    gc.collect()
    cu.free_since(mark)
    # Stream-ordered frees run after the test returns. The loop ends as soon as all is back, so
    # the bound only decides how long a leak takes to report: generous, since CI runs the GPU
    # bundle's dry run at the lowest priority beside suites that take both cores.
    deadline = time.monotonic() + 20
    while True:
        for device in cuda:
            device.release_cached()
        now = cu.live()
        if now == before or time.monotonic() > deadline:
            break
        time.sleep(0.02)
    grew = {k: (before[k], now[k]) for k in before if before[k] != now[k]}
    assert not grew, f"the stand-in CUDA driver still holds what the test took: {grew}"


@pytest.fixture
def streams(cu):
    made = [cu.stream(), cu.stream(), cu.stream()]
    yield made
    for s in made:
        cu.destroy_stream(s)


def no_host_wait(cu, before):
    if cu.standin is None:
        return  # on a GPU the values are checked, the counts are not
    d = cu.delta(before)
    assert d["synchronizations"] == 0 and d["implicit_synchronizations"] == 0, d


def open_later(gate, seconds=0.05):
    t = threading.Timer(seconds, gate.open)
    t.start()
    return t


def test_cuda_array_interface_import_waits_on_the_producers_stream(cu, streams):
    producer_stream, other, _ = streams
    with Gate(cu, producer_stream) as gate:
        producer = Producer(cu, producer_stream)
        # Control: the memory read without the protocol's wait still holds the old bytes.
        assert cu.read(producer.ptr, 16, other) == OLD
        before = cu.counters() if cu.standin else None
        mv = ferry.MemoryView(producer)
        if before is not None:
            no_host_wait(cu, before)
        assert mv.device_type == ferry.DeviceType.CUDA
        assert mv.stream == producer_stream
        # Re-exported, the view names a stream that waits on the producer's: a consumer on it
        # reads the new bytes once the producer ran.
        cai = mv.__cuda_array_interface__
        assert cai["stream"] > 2 and cai["stream"] != producer_stream
        timer = open_later(gate)
        assert cu.read(cai["data"][0], 16, cai["stream"]) == NEW
        timer.join()


def test_cuda_array_interface_without_a_stream_is_ready_data(cu, streams):
    producer_stream, other, _ = streams
    producer = Producer(cu, producer_stream, with_stream=False)
    cu.call("cuStreamSynchronize", producer_stream)  # the producer's promise without a stream
    mv = ferry.MemoryView(producer)
    assert mv.stream is None
    assert "stream" not in mv.__cuda_array_interface__
    assert cu.read(mv.ptr, 16, other) == NEW


@pytest.mark.parametrize("kind", ["legacy", "per_thread", "handle"])
def test_dlpack_export_makes_the_data_ready_on_the_consumers_stream(cu, streams, kind):
    producer_stream, consumer, other = streams
    with Gate(cu, producer_stream) as gate:
        mv = ferry.MemoryView(Producer(cu, producer_stream))
        stream = {"legacy": 1, "per_thread": 2, "handle": consumer}[kind]
        before = cu.counters() if cu.standin else None
        capsule = mv.__dlpack__(stream=stream, max_version=(1, 0))
        if before is not None:
            no_host_wait(cu, before)
            assert cu.delta(before)["stream_waits"] == 1  # the consumer's stream waits, once
        assert "dltensor" in repr(capsule)
        if kind == "handle":
            assert cu.read(mv.ptr, 16, other) == OLD  # control: not ready on another stream
            timer = open_later(gate)
            assert cu.read(mv.ptr, 16, consumer) == NEW
            timer.join()


def test_dlpack_export_stream_none_is_the_legacy_stream_and_minus_one_does_nothing(cu, streams):
    producer_stream = streams[0]
    gate = Gate(cu, producer_stream)
    mv = ferry.MemoryView(Producer(cu, producer_stream))
    before = cu.counters() if cu.standin is not None else None
    mv.__dlpack__(max_version=(1, 0))  # stream=None: the legacy default stream waits
    if before is not None:
        d = cu.delta(before)
        assert d["stream_waits"] == 1 and d["synchronizations"] == 0
        before = cu.counters()
    mv.__dlpack__(stream=-1, max_version=(1, 0))  # the consumer synchronizes itself
    if before is not None:
        d = cu.delta(before)
        assert d["stream_waits"] == 0 and d["synchronizations"] == 0
    # On any driver: a read queued on the legacy stream now waits for the producer, so it sees
    # the new bytes once the gate opens.
    timer = open_later(gate)
    assert cu.read(mv.ptr, 16, 1) == NEW  # 1: CU_STREAM_LEGACY
    timer.join()


def test_dlpack_export_refuses_the_streams_the_spec_forbids(cu, streams, gpu):
    mv = ferry.MemoryView(Producer(cu, streams[0]))
    with pytest.raises(ValueError, match="stream 0 is ambiguous"):
        mv.__dlpack__(stream=0, max_version=(1, 0))
    with pytest.raises(ValueError, match="is invalid"):
        mv.__dlpack__(stream=-2, max_version=(1, 0))
    host = ferry.MemoryView(np.arange(4, dtype=np.int32))
    with pytest.raises(ValueError, match="must be None for CPU"):
        host.__dlpack__(stream=1, max_version=(1, 0))
    host.__dlpack__(stream=-1, max_version=(1, 0))  # allowed: no synchronization


def test_dlpack_import_passes_ferrys_stream_to_the_producer(cu, streams):
    producer_stream = streams[0]
    with Gate(cu, producer_stream) as gate:
        producer = Producer(cu, producer_stream)
        before = cu.counters() if cu.standin else None
        mv = ferry.from_dlpack(producer)
        if before is not None:
            no_host_wait(cu, before)
        assert len(producer.dlpack_streams) == 1
        assert producer.dlpack_streams[0] is not None and producer.dlpack_streams[0] > 2
        # ferry's view now orders on that stream: its re-export is ready only after the producer.
        cai = mv.__cuda_array_interface__
        timer = open_later(gate)
        assert cu.read(cai["data"][0], 16, cai["stream"]) == NEW
        timer.join()


def test_device_capsules_carry_the_array_and_its_event(gpu):
    src = pa.array([[1, 2], None, [3]], pa.list_(pa.int64()))
    on_gpu = ferry.array(src).copy_to(gpu)
    assert on_gpu.device_type == ferry.DeviceType.CUDA
    with pytest.raises(ValueError, match="not the CPU"):
        on_gpu.__arrow_c_array__()
    again = ferry.array(on_gpu)  # through __arrow_c_device_array__
    assert again.device_type == ferry.DeviceType.CUDA and again.device_id == 0

    class Holder:  # a foreign producer of the device capsule only
        def __init__(self, capsules):
            self.capsules = capsules

        def __arrow_c_device_array__(self, requested_schema=None, **kwargs):
            return self.capsules

    moved = ferry.array(Holder(on_gpu.__arrow_c_device_array__()))
    back = pa.array(moved.copy_to(ferry.Device.cpu()))
    assert back.equals(src)
    moved.validate()


@pytest.mark.parametrize("kind", ["CUDA_HOST", "CUDA_MANAGED"])
def test_host_readable_cuda_memory_exports_through_the_buffer_protocol(kind):
    try:
        device = ferry.Device.resolve(getattr(ferry.DeviceType, kind), 0)
    except ValueError as e:
        pytest.skip(f"no {kind}0 device: {e}")
    values = pa.array(np.arange(10, dtype=np.float64))
    mv = ferry.MemoryView.from_array(ferry.array(values).copy_to(device))
    assert np.array_equal(np.asarray(memoryview(mv)), np.arange(10, dtype=np.float64))


def test_device_memory_refuses_the_buffer_protocol(gpu):
    mv = ferry.MemoryView.from_array(ferry.array(pa.array([1.0, 2.0])).copy_to(gpu))
    with pytest.raises(BufferError, match="on CUDA"):
        memoryview(mv)
    assert mv.__dlpack_device__() == (2, 0)


def test_dlpack_exchange_api_orders_reads_on_ferrys_stream(cu, streams):
    """ferry's `__dlpack_c_exchange_api__` synchronizes nothing on the host: the stream its
    current_work_stream names waits on the view's event, so a consumer launching there reads the
    producer's bytes; ferry, as the consumer of the same table, keeps the order in the new view."""
    producer_stream, other, _ = streams
    api = table(ferry.MemoryView)
    with Gate(cu, producer_stream) as gate:
        mv = ferry.MemoryView(Producer(cu, producer_stream))
        work = ctypes.c_void_p()
        assert api.current_work_stream(kDLCUDA, 0, ctypes.byref(work)) == 0 and work.value
        before = cu.counters() if cu.standin else None
        t = export(api, mv)
        again = ferry.from_dlpack(mv)  # through the same table
        if before is not None:
            no_host_wait(cu, before)
        dl = t.contents.dl_tensor
        assert (dl.data, dl.device.device_type) == (mv.ptr, kDLCUDA)
        assert again.ptr == mv.ptr and again.device_type == ferry.DeviceType.CUDA
        assert cu.read(mv.ptr, 16, other) == OLD  # control: a stream that waits on nothing
        timer = open_later(gate)
        assert cu.read(mv.ptr, 16, work.value) == NEW
        timer.join()
        t.contents.deleter(t)
    assert cu.read(again.ptr, 16, again.__cuda_array_interface__.get("stream", other)) == NEW

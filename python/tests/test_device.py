"""The device layer against pyarrow: pyarrow's CPU device arrays go into ferry through
`_export_to_c_device`, travel CPU -> device -> CPU (the guarded device, and the CUDA devices: the
stand-in driver under scripts/test.sh), and come back through `_import_from_c_device` equal to
what left."""
import ctypes
import os

import pyarrow as pa
import pytest

import ferry_ctypes as fc
from arrays import TYPE_CASES
from render import render

NAMES = sorted(TYPE_CASES)


def round_trip(arr, device):
    """pyarrow -> ferry (CPU device array) -> `device` -> CPU -> pyarrow."""
    schema = fc.ArrowSchema()
    exported = fc.ArrowDeviceArray()
    arr._export_to_c_device(ctypes.addressof(exported), ctypes.addressof(schema))
    try:
        assert exported.device_type == fc.ARROW_DEVICE_CPU
        on_device = fc.device_copy(schema, exported, device)
        try:
            assert on_device.device_type != fc.ARROW_DEVICE_CPU or device == fc.lib.FerryDeviceCpu()
            back = fc.device_copy(schema, on_device, fc.lib.FerryDeviceCpu())
        finally:
            fc.release(on_device.array)
        assert back.device_type == fc.ARROW_DEVICE_CPU
        assert back.sync_event is None
        assert list(back.reserved) == [0, 0, 0]
        imported_schema = fc.deep_copy_schema(schema)
        # pyarrow takes ownership of both structs.
        return pa.Array._import_from_c_device(ctypes.addressof(back), ctypes.addressof(imported_schema))
    finally:
        fc.release(exported.array)
        fc.release(schema)


DEVICES = {
    "GUARDED": (fc.ARROW_DEVICE_EXT_DEV, 0),
    "CUDA0": (fc.ARROW_DEVICE_CUDA, 0),
    "CUDA_HOST0": (fc.ARROW_DEVICE_CUDA_HOST, 0),
    "CUDA_MANAGED0": (fc.ARROW_DEVICE_CUDA_MANAGED, 0),
}


def resolve_or_skip(name):
    try:
        return fc.resolve_device(*DEVICES[name])
    except fc.FerryError as e:
        if name in os.environ.get("FERRY_REQUIRE_DEVICES", "").split(","):
            pytest.fail(f"{name} is required ($FERRY_REQUIRE_DEVICES) but: {e}")
        pytest.skip(f"no {name} device on this machine: {e}")


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("sliced", [False, True], ids=["whole", "sliced"])
@pytest.mark.parametrize("device_name", sorted(DEVICES))
def test_pyarrow_device_arrays_round_trip_through_a_device(name, sliced, device_name):
    arr = TYPE_CASES[name]
    if sliced:
        arr = arr.slice(3, max(len(arr) - 7, 0))
    back = round_trip(arr, resolve_or_skip(device_name))
    back.validate(full=True)
    assert back.type == arr.type
    assert render(back) == render(arr)
    if name != "float64_special":  # NaN != NaN for equals(); the rendering compared it above
        assert back.equals(arr), f"{back} != {arr}"
    # Only the visible slice travelled: the copy starts at offset 0 (a run-end encoded array
    # keeps its children whole, so its offset stays: docs/device.md).
    assert back.offset == (arr.offset if name == "run_end_encoded" else 0)


def test_ferry_cpu_device_arrays_import_into_pyarrow():
    """A device array ferry made (FerryDeviceArrayInit) is read by pyarrow's device import."""
    schema = fc.ArrowSchema()
    pa.field("x", pa.list_(pa.string()))._export_to_c(ctypes.addressof(schema))
    array = fc.ArrowArray()
    error = fc.FerryErrorStruct()
    fc.check(fc.lib.FerryArrayFromJson(ctypes.byref(schema), b'[["a", null], null, ["bcd"]]',
                                       ctypes.byref(array), ctypes.byref(error)), error)
    device_array = fc.ArrowDeviceArray()
    fc.check(fc.lib.FerryDeviceArrayInit(fc.lib.FerryDeviceCpu(), ctypes.byref(device_array),
                                         ctypes.byref(array), None, ctypes.byref(error)), error)
    assert not array.release  # moved in
    got = pa.Array._import_from_c_device(ctypes.addressof(device_array), ctypes.addressof(schema))
    assert got.equals(pa.array([["a", None], None, ["bcd"]], pa.list_(pa.string())))


def test_unknown_devices_are_named():
    with pytest.raises(fc.FerryError, match="EXT_DEV device 3 does not exist"):
        fc.resolve_device(fc.ARROW_DEVICE_EXT_DEV, 3)

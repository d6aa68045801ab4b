"""Shared fixtures data for the binding tests (test_binding_*.py): the type cases (pyarrow) in every
variant, and helpers that compare ferry's results with pyarrow's own."""
import ctypes

import pyarrow as pa

from arrays import TYPE_CASES
from render import render

NAMES = sorted(TYPE_CASES)
VARIANTS = ["whole", "sliced", "empty"]


def variant(name, how):
    arr = TYPE_CASES[name]
    if how == "sliced":
        return arr.slice(3, max(len(arr) - 7, 0))
    if how == "empty":
        return arr.slice(0, 0)
    return arr


def assert_same(back, arr):
    """`back` holds what `arr` holds, as pyarrow itself judges (NaN-aware through rendering)."""
    assert back.type == arr.type
    assert len(back) == len(arr)
    assert back.null_count == arr.null_count
    assert render(back) == render(arr)
    if not pa.types.is_floating(arr.type):
        assert back.equals(arr), f"{back} != {arr}"


def addresses(arr):
    return [b.address if b is not None else None for b in arr.buffers()]


_name = ctypes.pythonapi.PyCapsule_GetName
_name.restype = ctypes.c_char_p
_name.argtypes = [ctypes.py_object]
_valid = ctypes.pythonapi.PyCapsule_IsValid
_valid.restype = ctypes.c_int
_valid.argtypes = [ctypes.py_object, ctypes.c_char_p]


def capsule_name(capsule):
    return _name(capsule).decode()


def capsule_is(capsule, name):
    return _valid(capsule, name.encode()) == 1


class Only:
    """A producer that exposes only the named dunders of `target`, to steer a consumer's path."""

    def __init__(self, target, *names):
        self._target = target
        for n in names:
            setattr(self, n, getattr(target, n))

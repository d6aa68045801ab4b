"""The error table on the C and Python faces, against expectations written from
docs/architecture.md ("Errors"): the C surface names each errno-style code (FerryErrorCodeName,
through ctypes), and the binding raises each code's class, a subclass of ferry.Error and of the
builtin that fits, so `except ValueError:` keeps working. Real failures raise the same classes.
(The gRPC face is tests/flight/test_grpc_status.py; the Ruby face ruby/test/status_code_test.rb.)"""
import errno

import pytest

import ferry
from ferry_ctypes import lib

EXPECTED = {
    "InvalidArgument": (errno.EINVAL, ValueError),
    "NotFound": (errno.ENOENT, FileNotFoundError),
    "AlreadyExists": (errno.EEXIST, FileExistsError),
    "FailedPrecondition": (errno.EBUSY, RuntimeError),
    "OutOfRange": (errno.ERANGE, IndexError),
    "Unavailable": (errno.ECONNREFUSED, ConnectionError),
    "DeadlineExceeded": (errno.ETIMEDOUT, TimeoutError),
    "Cancelled": (errno.ECANCELED, None),
    "PermissionDenied": (errno.EACCES, PermissionError),
    "Unauthenticated": (errno.EPERM, PermissionError),
    "ResourceExhausted": (errno.ENOMEM, MemoryError),
    "DataLoss": (errno.EBADMSG, None),
    "Unimplemented": (errno.ENOTSUP, NotImplementedError),
    "Internal": (errno.ENOTRECOVERABLE, RuntimeError),
    "IOError": (errno.EIO, OSError),
}


def _class(name):
    return getattr(ferry, "IOError" if name == "IOError" else name + "Error")


def test_the_c_face_names_every_code():
    for name, (c_code, _) in EXPECTED.items():
        assert lib.FerryErrorCodeName(c_code).decode() == name
    assert lib.FerryErrorCodeName(0).decode() == "OK"
    assert lib.FerryErrorCodeName(errno.EXDEV).decode() == "Unknown"


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_each_code_raises_its_class(name):
    _, base = EXPECTED[name]
    cls = _class(name)
    assert cls.__module__ == "ferry._ferry" and cls.code == name
    assert issubclass(cls, ferry.Error)
    if base is not None:
        assert issubclass(cls, base)
    with pytest.raises(cls, match="what went wrong") as raised:
        ferry._ferry._raise_status(name, "what went wrong")
    assert type(raised.value) is cls
    assert str(raised.value) == "what went wrong"


def test_the_table_is_the_one_the_classes_come_from():
    rows = ferry._ferry.status_codes()
    assert [r["name"] for r in rows] == list(EXPECTED)
    for row in rows:
        assert getattr(ferry, row["error_class"]) is _class(row["name"])
    with pytest.raises(ValueError, match="no error code named"):
        ferry._ferry._raise_status("NoSuchCode", "x")


def test_real_failures_raise_the_table_classes():
    with pytest.raises(ferry.InvalidArgumentError):
        ferry.ipc.read_stream(b"not an arrow stream at all, just bytes")
    with pytest.raises(ferry.NotFoundError, match="nope"):
        ferry.ipc.FileReader("/nonexistent/nope.arrow")
    with pytest.raises(ferry.NotFoundError, match="no flight named"):
        ferry.flight.Server.start(planes=[]).drop("missing")

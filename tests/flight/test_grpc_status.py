"""The error table on the gRPC face: `ferry serve --flight` (a test tree's, with the test action
`test-fail`) answers a call failing with each code, and grpcio (gRPC's own Python client, which
shares no code with ferry) reads the status code the table names; ferry's own Flight client then
raises the table's Python class for the same call. Real refusals (a missing token, an unknown
flight) come back the same way."""
import errno

import grpc
import pyarrow as pa
import pytest

import ferry
from flight_support import Serve

# The oracle, written from docs/architecture.md ("Errors"), not from the table.
EXPECTED = {
    "InvalidArgument": (errno.EINVAL, grpc.StatusCode.INVALID_ARGUMENT, ValueError),
    "NotFound": (errno.ENOENT, grpc.StatusCode.NOT_FOUND, FileNotFoundError),
    "AlreadyExists": (errno.EEXIST, grpc.StatusCode.ALREADY_EXISTS, FileExistsError),
    "FailedPrecondition": (errno.EBUSY, grpc.StatusCode.FAILED_PRECONDITION, RuntimeError),
    "OutOfRange": (errno.ERANGE, grpc.StatusCode.OUT_OF_RANGE, IndexError),
    "Unavailable": (errno.ECONNREFUSED, grpc.StatusCode.UNAVAILABLE, ConnectionError),
    "DeadlineExceeded": (errno.ETIMEDOUT, grpc.StatusCode.DEADLINE_EXCEEDED, TimeoutError),
    "Cancelled": (errno.ECANCELED, grpc.StatusCode.CANCELLED, None),
    "PermissionDenied": (errno.EACCES, grpc.StatusCode.PERMISSION_DENIED, PermissionError),
    "Unauthenticated": (errno.EPERM, grpc.StatusCode.UNAUTHENTICATED, PermissionError),
    "ResourceExhausted": (errno.ENOMEM, grpc.StatusCode.RESOURCE_EXHAUSTED, MemoryError),
    "DataLoss": (errno.EBADMSG, grpc.StatusCode.DATA_LOSS, None),
    "Unimplemented": (errno.ENOTSUP, grpc.StatusCode.UNIMPLEMENTED, NotImplementedError),
    "Internal": (errno.ENOTRECOVERABLE, grpc.StatusCode.INTERNAL, RuntimeError),
    "IOError": (errno.EIO, grpc.StatusCode.UNKNOWN, OSError),
}


def _action(type_, body):
    """A Flight Action message, encoded by hand (protobuf: 1 = type, 2 = body)."""
    def field(number, data):
        n, out = len(data), bytearray([number << 3 | 2])
        while n >= 0x80:
            out.append(n & 0x7F | 0x80)
            n >>= 7
        out.append(n)
        return bytes(out) + data
    return field(1, type_.encode()) + field(2, body)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("status")
    path = tmp / "t.arrows"
    with pa.ipc.new_stream(str(path), pa.schema([("x", pa.int64())])) as w:
        w.write_table(pa.table({"x": [1, 2, 3]}))
    with Serve(f"t={path}", env={"FERRY_TOKEN": "s3cret"}, tmp=str(tmp)) as s:
        yield s


def _grpc_call(server, type_, body, token="s3cret"):
    target = server.uri.split("://", 1)[1]
    with grpc.insecure_channel(target) as channel:
        call = channel.unary_stream("/arrow.flight.protocol.FlightService/DoAction",
                                    request_serializer=lambda b: b,
                                    response_deserializer=lambda b: b)
        metadata = [("authorization", f"Bearer {token}")] if token else []
        return list(call(_action(type_, body), metadata=metadata, timeout=10))


def test_the_table_is_as_documented():
    rows = {r["name"]: r for r in ferry._ferry.status_codes()}
    assert set(rows) == set(EXPECTED)
    for name, (c_code, grpc_code, base) in EXPECTED.items():
        row = rows[name]
        assert row["c_code"] == c_code, name
        assert row["grpc_code"] == grpc_code.value[0], name
        assert row["python_base"] == (base.__name__ if base else None), name


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_each_code_crosses_grpc(server, name):
    _, grpc_code, base = EXPECTED[name]
    # gRPC's own client sees the table's status code.
    with pytest.raises(grpc.RpcError) as raw:
        _grpc_call(server, "test-fail", name.encode())
    assert raw.value.code() == grpc_code
    assert f"failing as asked: {name}" in raw.value.details()
    # ferry's client turns it back into the same code: the table's class, under ferry.Error.
    client = ferry.flight.connect(server.uri, token="s3cret")
    cls = getattr(ferry, "IOError" if name == "IOError" else name + "Error")
    with pytest.raises(cls) as raised:
        client.do_action("test-fail", name.encode())
    assert isinstance(raised.value, ferry.Error)
    if base is not None:
        assert isinstance(raised.value, base)
    assert f"failing as asked: {name}" in str(raised.value)


def test_real_refusals_carry_their_codes(server):
    with pytest.raises(grpc.RpcError) as missing_token:
        _grpc_call(server, "stats", b"", token=None)
    assert missing_token.value.code() == grpc.StatusCode.UNAUTHENTICATED
    with pytest.raises(ferry.UnauthenticatedError):
        ferry.flight.connect(server.uri).list_flights()
    client = ferry.flight.connect(server.uri, token="s3cret")
    with pytest.raises(ferry.NotFoundError, match="no flight named"):
        client.get_flight_info("no-such-flight")
    with pytest.raises(ferry.UnimplementedError, match="unknown action"):
        client.do_action("no-such-action")

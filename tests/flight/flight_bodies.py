"""The protobuf bodies of Flight's standard session actions, encoded and decoded here from the
Flight specification's message definitions (independently of ferry's Flight.proto), and a
pyarrow.flight client middleware that keeps cookies as a browser would. Bodies that pyarrow can
serialize itself (FlightInfo, FlightEndpoint) are taken from pyarrow."""
import struct

import pyarrow.flight as fl


def varint(n):
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        if n:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def field(number, wire_type, payload):
    """One field: its key, then for wire type 2 the length and the bytes, else the payload as is."""
    key = varint((number << 3) | wire_type)
    if wire_type == 2:
        return key + varint(len(payload)) + payload
    return key + payload


def renew_request(endpoint):
    """RenewFlightEndpointRequest{endpoint = 1} around pyarrow's own FlightEndpoint."""
    return field(1, 2, endpoint.serialize())


def cancel_request(info):
    """CancelFlightInfoRequest{info = 1} around pyarrow's own FlightInfo."""
    return field(1, 2, info.serialize())


def option_value(value):
    """SessionOptionValue: string 1, bool 2, sfixed64 int64 3, double 4, StringListValue 5; None
    leaves the oneof unset (remove the option)."""
    if value is None:
        return b""
    if isinstance(value, bool):
        return field(2, 0, varint(int(value)))
    if isinstance(value, int):
        return field(3, 1, struct.pack("<q", value))
    if isinstance(value, float):
        return field(4, 1, struct.pack("<d", value))
    if isinstance(value, str):
        return field(1, 2, value.encode())
    return field(5, 2, b"".join(field(1, 2, v.encode()) for v in value))


def set_options_request(options):
    """SetSessionOptionsRequest{map<string, SessionOptionValue> session_options = 1}: each map
    entry is a message {key = 1, value = 2}."""
    return b"".join(field(1, 2, field(1, 2, k.encode()) + field(2, 2, option_value(v)))
                    for k, v in options.items())


def parse(data):
    """A message's fields as (number, wire type, value) in order: varints as ints, fixed64 as 8
    bytes, length-delimited as bytes."""
    out, i = [], 0
    while i < len(data):
        key, i = _read_varint(data, i)
        number, wire_type = key >> 3, key & 7
        if wire_type == 0:
            value, i = _read_varint(data, i)
        elif wire_type == 1:
            value, i = data[i:i + 8], i + 8
        elif wire_type == 2:
            n, i = _read_varint(data, i)
            value, i = data[i:i + n], i + n
        elif wire_type == 5:
            value, i = data[i:i + 4], i + 4
        else:
            raise ValueError(f"wire type {wire_type} at {i}")
        out.append((number, wire_type, value))
    return out


def _read_varint(data, i):
    n, shift = 0, 0
    while True:
        b = data[i]
        i += 1
        n |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return n, i


def _decode_value(data):
    fields = parse(data)
    if not fields:
        return None
    number, _, raw = fields[0]
    if number == 1:
        return raw.decode()
    if number == 2:
        return bool(raw)
    if number == 3:
        return struct.unpack("<q", raw)[0]
    if number == 4:
        return struct.unpack("<d", raw)[0]
    return [v.decode() for _, _, v in parse(raw)]


def _map(data, decode):
    out = {}
    for number, _, entry in parse(data):
        assert number == 1
        kv = dict((n, v) for n, _, v in parse(entry))
        out[kv[1].decode()] = decode(kv.get(2, b""))
    return out


def set_options_errors(body):
    """SetSessionOptionsResult{map<string, Error{ErrorValue value = 1}> errors = 1}: name -> the
    ErrorValue's number (1 INVALID_NAME, 2 INVALID_VALUE, 3 ERROR)."""
    return _map(body, lambda e: dict((n, v) for n, _, v in parse(e)).get(1, 0))


def get_options(body):
    """GetSessionOptionsResult{map<string, SessionOptionValue> session_options = 1}."""
    return _map(body, _decode_value)


def status_of(body):
    """The one enum field (number 1) of CancelFlightInfoResult or CloseSessionResult."""
    return dict((n, v) for n, _, v in parse(body)).get(1, 0)


def action(client, kind, body=b"", options=None):
    """do_action's one result body."""
    [result] = list(client.do_action(fl.Action(kind, body), options=options))
    return result.body.to_pybytes()


class CookieMiddlewareFactory(fl.ClientMiddlewareFactory):
    """Keeps the cookies of every set-cookie header and sends them on each call; Max-Age=0
    forgets one (RFC 6265)."""

    def __init__(self):
        self.cookies = {}

    def start_call(self, info):
        return _CookieMiddleware(self)


class _CookieMiddleware(fl.ClientMiddleware):
    def __init__(self, factory):
        self.factory = factory

    def sending_headers(self):
        if not self.factory.cookies:
            return {}
        return {"cookie": "; ".join(f"{k}={v}" for k, v in self.factory.cookies.items())}

    def received_headers(self, headers):
        for line in headers.get("set-cookie", []):
            pair, *attributes = [p.strip() for p in line.split(";")]
            name, _, value = pair.partition("=")
            if any(a.lower() == "max-age=0" for a in attributes):
                self.factory.cookies.pop(name, None)
            else:
                self.factory.cookies[name] = value

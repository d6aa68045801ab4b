"""A Flight server of named tables written with pyarrow.flight (Arrow C++): the independent peer
that ferry's Flight clients, blocking and asyncio, are checked against."""
import pyarrow.flight as fl


class TableServer(fl.FlightServerBase):
    """A Flight server of named tables: each flight has one endpoint whose ticket is the name and
    which lists no location (redeem here); DoPut stores; DoAction 'echo' returns its body
    reversed. With `token`, every call must carry `authorization: Bearer <token>`."""

    def __init__(self, tables, token=None):
        middleware = {"auth": _BearerFactory(token)} if token else {}
        super().__init__("grpc://127.0.0.1:0", middleware=middleware)
        self.tables = dict(tables)

    def _info(self, name):
        t = self.tables[name]
        return fl.FlightInfo(t.schema, fl.FlightDescriptor.for_path(name),
                             [fl.FlightEndpoint(name.encode(), [])], t.num_rows, t.nbytes)

    def list_flights(self, context, criteria):
        for name in sorted(self.tables):
            yield self._info(name)

    def get_flight_info(self, context, descriptor):
        name = descriptor.path[0].decode()
        if name not in self.tables:
            raise fl.FlightServerError(f"no table {name}")
        return self._info(name)

    def get_schema(self, context, descriptor):
        return fl.SchemaResult(self.tables[descriptor.path[0].decode()].schema)

    def do_get(self, context, ticket):
        return fl.RecordBatchStream(self.tables[ticket.ticket.decode()])

    def do_put(self, context, descriptor, reader, writer):
        self.tables[descriptor.path[0].decode()] = reader.read_all()

    def list_actions(self, context):
        return [("echo", "returns its body reversed")]

    def do_action(self, context, action):
        yield fl.Result(action.body.to_pybytes()[::-1])


class _Bearer(fl.ServerMiddleware):
    pass


class _BearerFactory(fl.ServerMiddlewareFactory):
    def __init__(self, token):
        self.token = token

    def start_call(self, info, headers):
        if headers.get("authorization") != [f"Bearer {self.token}"]:
            raise fl.FlightUnauthenticatedError("no or wrong bearer token")
        return _Bearer()

#!/usr/bin/env python3
"""The peer of bench/flight/flight_bench.py: a pyarrow.flight server (Arrow C++) of one IPC file,
read into memory once, served as flight [NAME] with DoGet. Prints its port, then serves until
killed.

    pyarrow_server.py FILE NAME
"""
import sys

import pyarrow as pa
import pyarrow.flight as fl


class Server(fl.FlightServerBase):
    def __init__(self, table, name):
        super().__init__("grpc://127.0.0.1:0")
        self.table, self.name = table, name

    def get_flight_info(self, context, descriptor):
        return fl.FlightInfo(self.table.schema, descriptor,
                             [fl.FlightEndpoint(self.name.encode(), [])],
                             self.table.num_rows, self.table.nbytes)

    def do_get(self, context, ticket):
        return fl.RecordBatchStream(self.table)


def main():
    path, name = sys.argv[1], sys.argv[2]
    # The whole file in memory; the table's buffers point into it (as ferry's point into its
    # mapping of the file).
    with open(path, "rb") as f:
        table = pa.ipc.open_stream(pa.py_buffer(f.read())).read_all()
    server = Server(table, name)
    print(server.port, flush=True)
    server.serve()


if __name__ == "__main__":
    main()

"""Arrow IPC streams and files."""

import ferry._ferry


def read_stream(source: object, validation: ferry._ferry.ValidationLevel = ferry._ferry.ValidationLevel.FULL) -> ferry._ferry.ArrayStream:
    """
    Read IPC data as an ArrayStream of record batches (struct arrays). `source` is a bytes-like object (read in place, kept alive by the arrays), a path (memory-mapped; the stream or the file format, told apart by the magic), or a readable file object (an open file, a socket's makefile: the stream format, read as the batches are taken, each read() under the GIL).
    """

class FileReader:
    """Random access to the record batches of an IPC file."""

    def __init__(self, source: object, validation: ferry._ferry.ValidationLevel = ferry._ferry.ValidationLevel.FULL) -> None:
        """
        Open a bytes-like object in place, a path through a read-only memory map, or a readable file object, read whole once (the footer is at the file's end).
        """

    @property
    def schema(self) -> ferry._ferry.Schema: ...

    @property
    def num_record_batches(self) -> int: ...

    def __len__(self) -> int: ...

    def read_record_batch(self, i: int) -> ferry._ferry.Array:
        """
        Decode record batch i as a struct array (IndexError when out of range).
        """

def write_stream(data: object, sink: object | None = None, *, compression: str | None = None, alignment: int = 8) -> object:
    """
    Write the record batches of any stream or struct-array producer in the IPC stream format: to memory (returns a read-only MemoryView of the bytes), to a path, or to a writable file object such as io.BytesIO or an open file, whose write() gets the bytes (returns the size; the file is neither flushed nor closed).
    """

def write_file(data: object, sink: object | None = None, *, compression: str | None = None, alignment: int = 8) -> object:
    """As write_stream, in the IPC file format."""

"""Arrow IPC streams and files: read zero-copy from bytes-like objects and memory-mapped files,
written from any stream or array producer."""
from ferry._ferry.ipc import FileReader, read_stream, write_file, write_stream  # noqa: F401

__all__ = ["FileReader", "read_stream", "write_file", "write_stream"]

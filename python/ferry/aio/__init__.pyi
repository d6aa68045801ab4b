from ferry.aio import dipc as dipc, flight as flight
from ferry.aio._dispatch import AsyncStream as AsyncStream

def set_workers(workers: int) -> None: ...
def workers() -> int: ...

__all__ = ["AsyncStream", "dipc", "flight", "set_workers", "workers"]

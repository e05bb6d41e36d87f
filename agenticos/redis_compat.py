"""Redis clients here never send CLIENT SETINFO.

The command is informational (it names the client library) and exists since Redis 7.2. The embedded
Redis of `make run` / `make test` is 6.2, which answers it with an error; redis-py means to swallow that
error, but on kombu's asynchronous BRPOP connection the reply was read as BRPOP's own, and the worker's
consumer stopped with "Unrecoverable error: ... Unknown subcommand ... 'SETINFO'" — a worker that takes no
more tasks. Leaving the command out costs nothing on any server.
"""

from __future__ import annotations

import functools

import redis.asyncio.connection
import redis.connection


def never_send_client_setinfo() -> None:
    for cls in (redis.connection.AbstractConnection, redis.asyncio.connection.AbstractConnection):
        _patch(cls)


def _patch(cls: type) -> None:
    original = cls.__dict__["__init__"]
    if getattr(original, "_without_setinfo", False):
        return

    @functools.wraps(original)
    def __init__(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        if "lib_name" not in kwargs and "lib_version" not in kwargs:
            kwargs.setdefault("driver_info", None)  # explicit None: no CLIENT SETINFO
        original(self, *args, **kwargs)

    __init__._without_setinfo = True  # type: ignore[attr-defined]
    setattr(cls, "__init__", __init__)  # noqa: B010

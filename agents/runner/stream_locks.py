"""pydantic-ai's stream locks, taken without a yield to the event loop when nobody else holds them.

pydantic-ai serializes every pull of a run's event stream with `anyio.Lock`s: one in each
`PeekableAsyncStream` (`_source_lock`) and two in each `AgentStream` (`_anext_lock`, `_model_pull_lock`) —
about 400 acquisitions a run on bench/run_cost.py's run. anyio's lock, by default, yields to the event loop on
every acquisition even when it is free (a cancel-shielded `sleep(0)`: a cancel scope entered and left and one
more turn of the loop, per streamed event and per layer). `fast_acquire=True` (anyio ≥ 4.5) skips that yield
when the lock is free and behaves the same when it is not; httpcore2 takes its own locks that way for the
same reason (pydantic/httpx2#970).

pydantic-ai has no setting for it and creates the locks itself, so they are replaced right after it creates
them — hand-written for that reason, and checked by tests/runner/test_stream_locks.py, which fails if a
pydantic-ai upgrade renames or adds a lock here so the replacement would silently stop applying. The yield was
not the only one: every pull still awaits the model's HTTP stream, which yields whenever it waits for bytes, so
one run's stream cannot hold the loop from the others any longer than its parsing takes.
"""

from __future__ import annotations

import functools

import anyio
from pydantic_ai import _utils, result

# The locks replaced, per class: what the drift test compares with the instances pydantic-ai builds.
LOCKS = {
    _utils.PeekableAsyncStream: ("_source_lock",),
    result.AgentStream: ("_anext_lock", "_model_pull_lock"),
}

_installed = False


def _fast(instance: object, names: tuple[str, ...]) -> None:
    for name in names:
        setattr(instance, name, anyio.Lock(fast_acquire=True))


def install() -> None:
    """Once per process: every stream pydantic-ai builds from now on takes its locks the fast way. Called as the
    agents app is ready, in every process that runs an agent (runs workers, and the web process's direct paths)."""
    global _installed
    if _installed:
        return
    _installed = True
    peekable_init = _utils.PeekableAsyncStream.__init__

    @functools.wraps(peekable_init)
    def peekable(self, *args, **kwargs):
        peekable_init(self, *args, **kwargs)
        _fast(self, LOCKS[_utils.PeekableAsyncStream])

    _utils.PeekableAsyncStream.__init__ = peekable  # type: ignore[method-assign]

    stream_post_init = result.AgentStream.__post_init__

    @functools.wraps(stream_post_init)
    def agent_stream(self):
        stream_post_init(self)
        _fast(self, LOCKS[result.AgentStream])

    result.AgentStream.__post_init__ = agent_stream  # type: ignore[method-assign]

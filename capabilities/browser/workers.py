"""The socket guard inside a page's workers, installed before their first line runs.

`page_js.SOCKET_GUARD` wraps the WebSocket constructor of every document (an init script), but a dedicated
worker is a global scope of its own that no init script reaches: one from a blob or a URL, one a worker starts,
one in a cross-site frame could open a WebSocket into the deployment unasked. Chromium can hold a new worker
before its script runs (`Target.setAutoAttach` with `waitForDebuggerOnStart`); this guard then evaluates the
same wrapper in the worker's scope (`Runtime.evaluate` runs code without enabling the Runtime domain) and lets
the worker go. Only then: a worker whose guard could not be installed stays held.

The requests of the page, its same-site frames and all their workers (a nested one's too) are paused on the
page's session, by session.py's guard; a cross-site frame's, and its workers', only on that frame's own target.
Playwright's route is no guard for them: it routes a paused request only once it has matched it to a
`Network.requestWillBeSent` (its `_onRequestPaused` sends one without a `networkId` on unrouted), which for a
worker means after Playwright enabled `Network` on the worker's session — and Playwright lets a worker go
(`runIfWaitingForDebugger`) before it asks to hold the worker's children (`setAutoAttach`), so under load a
worker's child starts before Playwright holds it, and Playwright attaches to it running (`waitingForDebugger`
false in its protocol log) and sees its first requests unrouted. (Chromium itself waits for every client holding
a worker; that is not the gap.) So this guard does not rely on the route for anything:
- it pauses every request of a cross-site frame (its frame and its workers) on that frame's session, checked by
  the browse's policy, as session.py's guard does on the page's;
- it answers the socket check (the wrapper's question) itself, on the page's and each cross-site frame's
  session, with a pattern that pauses only the check's path. Before, a nested worker's check went to the site
  (answered 404: the socket refused, the refusal unrecorded; a site answering "ok" opened the socket).

Shared workers are another matter: they belong to no page, and Chromium pauses none of their requests for a
client (`Fetch` on a shared worker's own session is accepted and never fires; Patchright's route does not see
them), so a shared worker's `fetch()` would go unchecked. A browse has none: `page_js.NO_SHARED_WORKERS`
removes the constructor from every document, as Chrome on Android never had it.

Why a DevTools connection of its own instead of Patchright's: holding a worker and speaking to it needs
flattened child sessions (commands carrying a `sessionId`), which Playwright's CDPSession does not send. So this
module keeps one WebSocket to the browser per browse and writes the few lines of CDP client it needs (send,
match the answer by id, dispatch `Target.attachedToTarget` and `Fetch.requestPaused`). Watched: the agent's
tab, its frames and their workers, recursively.
"""

from __future__ import annotations

import asyncio
import base64
import itertools
import json
import logging
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import urlsplit, urlunsplit

logger = logging.getLogger(__name__)

_HOLD = {"autoAttach": True, "waitForDebuggerOnStart": True, "flatten": True}
_WORKERS = ("worker",)  # a dedicated worker; a shared one never starts in a browse (page_js.NO_SHARED_WORKERS)
COMMAND_TIMEOUT_SECONDS = 10


class WorkerGuardError(Exception):
    """The guard could not be set up (the browse must not start without it)."""


async def browser_socket_url(address: str) -> str:
    """The browser-wide DevTools WebSocket behind `address` (http(s) → /json/version, as Playwright reads it).
    The answer's host is replaced by the one asked: the browser names itself by the Host header it was sent,
    and nothing it says may send this connection elsewhere."""
    parts = urlsplit(address)
    if parts.scheme in ("ws", "wss"):
        return address
    import httpx

    async with httpx.AsyncClient(timeout=COMMAND_TIMEOUT_SECONDS, trust_env=False) as client:
        response = await client.get(urlunsplit((parts.scheme, parts.netloc, "/json/version", "", "")))
        response.raise_for_status()
        given = urlsplit(str(response.json()["webSocketDebuggerUrl"]))
    scheme = "wss" if parts.scheme == "https" else "ws"
    return urlunsplit((scheme, parts.netloc, given.path, given.query, ""))


class WorkerGuard:
    def __init__(self, script: str, on_lost: Callable[[], Any] | None = None, *, check_path: str = "",
                 answer: Callable[[str], Awaitable[bool]] | None = None,
                 refusal: Callable[[str], Awaitable[str | None]] | None = None) -> None:
        self.script = script
        self.on_lost = on_lost
        # The socket check's path and who answers it (True: the socket may open), and the policy every request of
        # a cross-site frame is checked against (None: it may go); the module's docstring says why the guard
        # does both.
        self.check_path = check_path
        self.answer = answer
        self.refusal = refusal
        # The URLs of the last workers the guard was installed in (tests read it); a page starting workers by the
        # thousand does not grow it.
        self.guarded: deque[str] = deque(maxlen=100)
        self._socket: Any = None
        self._ids = itertools.count(1)
        self._pending: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self._reader: asyncio.Task[None] | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._closing = False

    async def start(self, address: str) -> None:
        import websockets

        try:
            url = await browser_socket_url(address)
            self._socket = await websockets.connect(url, max_size=None, proxy=None, ping_interval=None,
                                                    open_timeout=COMMAND_TIMEOUT_SECONDS)
            self._reader = asyncio.ensure_future(self._read())
        except Exception as exc:
            await self.close()
            raise WorkerGuardError(type(exc).__name__) from None

    async def watch(self, target_id: str) -> None:
        """Hold every frame and worker the page `target_id` starts from now on, recursively."""
        try:
            attached = await self._send("Target.attachToTarget", {"targetId": target_id, "flatten": True})
            await self._pause(attached["sessionId"], every_request=False)  # the page's own: session.py's guard
            await self._send("Target.setAutoAttach", _HOLD, attached["sessionId"])
        except Exception as exc:
            raise WorkerGuardError(type(exc).__name__) from None

    async def close(self) -> None:
        self._closing = True
        if self._socket is not None:
            try:
                await self._socket.close()
            except Exception:
                logger.debug("worker guard close", exc_info=True)
        if self._reader is not None:
            self._reader.cancel()
        for future in self._pending.values():
            future.cancel()
        self._pending.clear()
        self._socket = self._reader = None

    # ------------------------------------------------------------ the client

    async def _send(self, method: str, params: dict[str, Any] | None = None,
                    session: str | None = None) -> dict[str, Any]:
        if self._socket is None:
            raise WorkerGuardError("closed")
        message: dict[str, Any] = {"id": next(self._ids), "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._pending[message["id"]] = future
        await self._socket.send(json.dumps(message))
        try:
            answer = await asyncio.wait_for(future, COMMAND_TIMEOUT_SECONDS)
        finally:
            self._pending.pop(message["id"], None)
        if "error" in answer:
            raise WorkerGuardError(f"{method}: {answer['error'].get('message', '')}")
        return answer.get("result", {})

    async def _read(self) -> None:
        try:
            async for raw in self._socket:
                message = json.loads(raw)
                if "id" in message:
                    future = self._pending.get(message["id"])
                    if future is not None and not future.done():
                        future.set_result(message)
                elif message.get("method") == "Target.attachedToTarget":
                    self._spawn(self._attached(message["params"]))
                elif message.get("method") == "Fetch.requestPaused":
                    self._spawn(self._paused(message.get("sessionId", ""), message["params"]))
        except asyncio.CancelledError:
            raise
        except Exception:
            logger.debug("worker guard connection", exc_info=True)
        if not self._closing:
            # Workers would start unheld from now on: the browse must not go on without its guard.
            logger.warning("browser worker guard lost its connection; the browse is stopped")
            if self.on_lost is not None:
                self.on_lost()

    def _spawn(self, work: Awaitable[None]) -> None:
        task = asyncio.ensure_future(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _attached(self, params: dict[str, Any]) -> None:
        session = params["sessionId"]
        info = params.get("targetInfo", {})
        kind = info.get("type")
        try:
            # Everything attached here is the watched tab's own (its frames, their workers, theirs): every worker
            # is guarded, whatever else its target info says.
            if kind in _WORKERS:
                await self._send("Target.setAutoAttach", _HOLD, session)  # the workers it starts
                answer = await self._send("Runtime.evaluate", {"expression": self.script}, session)
                if "exceptionDetails" in answer:
                    # Held for good: its script never runs unguarded (the browse's end lets it go with its page).
                    logger.warning("worker guard failed in a %s; the worker stays held", kind)
                    return
                self.guarded.append(str(info.get("url", "")))
            elif kind == "iframe":
                await self._pause(session, every_request=True)  # a cross-site frame's requests are its own
                await self._send("Target.setAutoAttach", _HOLD, session)  # a cross-site frame's workers
            if params.get("waitingForDebugger"):
                await self._send("Runtime.runIfWaitingForDebugger", {}, session)
        except Exception:  # the target went away meanwhile, or the guard is closing
            logger.debug("worker guard attach", exc_info=True)

    # ------------------------------------------------------------ the requests

    async def _pause(self, session: str, *, every_request: bool) -> None:
        """Pause the socket check's requests of this page or frame and of its workers (a dedicated worker's
        requests, a nested one's too, are paused on its frame's session); in a cross-site frame every request,
        which the page's session never sees."""
        if every_request and self.refusal is not None:
            pattern = "*"
        elif self.check_path and self.answer is not None:
            pattern = f"*{self.check_path}*"
        else:
            return
        await self._send("Fetch.enable", {"patterns": [{"urlPattern": pattern, "requestStage": "Request"}]}, session)

    async def _paused(self, session: str, params: dict[str, Any]) -> None:
        request_id = params["requestId"]
        url = str(params.get("request", {}).get("url", ""))
        try:
            if self.answer is not None and urlsplit(url).path == self.check_path:
                await self._answer_check(session, request_id, url)
                return
            try:
                reason = await self.refusal(url) if self.refusal is not None else None
            except Exception:  # fails closed
                logger.warning("worker guard could not check a request", exc_info=True)
                reason = "unchecked"
            if reason is None:
                await self._send("Fetch.continueRequest", {"requestId": request_id}, session)
            else:
                await self._send("Fetch.failRequest", {"requestId": request_id, "errorReason": "BlockedByClient"},
                                 session)
        except Exception:  # the page or frame went away meanwhile, or the guard is closing
            logger.debug("worker guard request", exc_info=True)

    async def _answer_check(self, session: str, request_id: str, url: str) -> None:
        assert self.answer is not None
        try:
            allowed = await self.answer(url)
        except Exception:  # fails closed: a question left paused would hang the worker's synchronous XHR
            logger.warning("worker guard could not answer a socket check", exc_info=True)
            allowed = False
        await self._send("Fetch.fulfillRequest", {
            "requestId": request_id, "responseCode": 200,
            "responseHeaders": [{"name": "Content-Type", "value": "text/plain"},
                                {"name": "Access-Control-Allow-Origin", "value": "*"},
                                {"name": "Cache-Control", "value": "no-store"}],
            "body": base64.b64encode(b"ok" if allowed else b"no").decode(),
        }, session)

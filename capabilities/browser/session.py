"""One run's tab: a browser context of its own on the operator's Chromium, its guard, and the actions.

Why Patchright's `connect_over_cdp`: it is Playwright (the same API, kept in step with Playwright's releases)
patched so that it never enables the CDP Runtime domain on a page. With Runtime on, every `console.*` call is
wrapped for the client, and wrapping an Error reads its native `stack`, which runs the page's own
`Error.prepareStackTrace` — one line of page script that tells a driven browser from a person's (the probe in
tests/capabilities/test_browser_runtime_domain.py; the older `stack`-getter probe no longer fires on Chromium
156, this one does, and catches plain Playwright). Patchright finds execution contexts without Runtime events
and runs its own scripts (the row reader, `fill`, `click`) in an isolated world the page cannot see, so the
page's world has nothing of the driver in it. A raw CDP client (cdp-use) would also leave Runtime off, but
this project would then write by hand what Patchright keeps: browser contexts (`new_context` is CDP's
`Target.createBrowserContext`: cookies and storage of one browse never reach another), element handles that
stay bound to the DOM node a row was read from (an action names a row, never a selector), actionability waits
for click/fill/select, navigation waits, routes, and the same API the tests drive.

What it lacks is interception of redirect hops (`route` sees only a request's first URL), so the guard also
holds a CDP session of its own on each page with `Fetch` paused at the request stage, which Chromium raises
for every hop, every subresource and every `fetch()` a page makes. That session and the live view's
(`live.py`) send Fetch, Page and Input commands only, never `Runtime.enable`. The one Playwright feature
Patchright loses is the WebSocket route (it needs a Runtime binding in the page's world), so a page's
WebSocket asks `_route` through `page_js.SOCKET_GUARD` instead.

Organizations on one browser (issue 37). The operator runs one Chromium for every organization; what keeps
them apart is that each browse is a browser context of its own (`new_context`, CDP's
`Target.createBrowserContext`), created for the run and closed with it, never the browser's default one:
- cookies, storage, cache, permissions and service/shared workers are the context's: one organization's session
  on a site is never the next one's;
- a page finds other pages only within its context (`window.open` by name, `BroadcastChannel`, an opener), and the
  browse keeps one tab in it (`_route`, `_on_page`);
- the list of every tab (targets of every context: URLs with their query strings, the sockets that drive them) is
  DevTools', which only this server's processes speak to: a page never reaches the DevTools port, whatever any
  list names (`internal.py`), and nothing of a browse hands a target or context id to a page or a model.
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import secrets
import threading
import weakref
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit, urlunsplit

from django.conf import settings

from agenticos import netguard
from capabilities.browser import page_js
from capabilities.browser.policy import RequestPolicy

logger = logging.getLogger(__name__)

INSTALL_LINE = 'pip install "agenticos[browser]"'
MAX_TEXT = 4000
ACTION_TIMEOUT_MS = 8000
NAVIGATION_TIMEOUT_MS = 20000
READ_ATTEMPTS = 6
# What Playwright says when the document being read was replaced by a navigation.
_NAVIGATION_ERRORS = ("Execution context was destroyed", "navigat", "Cannot find context with specified id")


class BrowserUnavailable(Exception):
    """The browser service cannot be used now (not installed, not answering, refused). Message is safe."""


class ActionFailed(Exception):
    """One action could not be done on this page (a row that is gone, a field that is not a field)."""


@dataclass
class PageView:
    url: str
    title: str
    rows: list[dict[str, Any]]
    text: str
    truncated: bool
    screenshot: bytes | None = None

    def render(self) -> str:
        lines = [f"URL: {self.url}", f"Title: {self.title}", "", "Elements you can act on (by number):"]
        lines += [f"[{i}] {describe_row(row)}" for i, row in enumerate(self.rows, start=1)] or ["(none)"]
        lines += ["", "Visible text" + (" (cut at 4,000 characters)" if self.truncated else "") + ":",
                  self.text or "(no text)"]
        return "\n".join(lines)


def describe_row(row: dict[str, Any]) -> str:
    kind = row.get("kind", row.get("tag", ""))
    label = row.get("label") or row.get("placeholder") or ""
    parts = [f"{kind} {label!r}" if label else kind]
    if kind == "link" and row.get("href"):
        parts.append(f"-> {row['href']}")
    if "filled" in row:
        parts.append("(filled)" if row["filled"] else "(empty)")
    if "checked" in row:
        parts.append("(checked)" if row["checked"] else "(unchecked)")
    if kind == "select":
        parts.append(f"options {row.get('options', [])} selected {row.get('selected', '')!r}")
    return " ".join(parts)


def _playwright() -> Any:
    try:
        from patchright.async_api import async_playwright
    except ImportError:
        raise BrowserUnavailable(f"The browser capability is not installed here: run {INSTALL_LINE}.") from None
    return async_playwright


async def endpoint(config: Any, secret: str | None) -> str:
    """The CDP address to connect to. An http/ws endpoint given by name is resolved once and reached by its
    address (Chromium answers DevTools only on an IP or localhost Host header); a TLS one keeps its name for
    its certificate. A hosted browser gets the binding's key in its query under `hosted_key_param`."""
    if config.connection == "hosted":
        if not secret:
            raise BrowserUnavailable("A hosted browser needs its key: bind a secret to the capability.")
        parts = urlsplit(config.hosted_url)
        query = "&".join(p for p in (parts.query, urlencode({config.hosted_key_param: secret})) if p)
        return urlunsplit((parts.scheme, parts.netloc, parts.path, query, ""))
    address = cdp_address(config)
    parts = urlsplit(address)
    host = parts.hostname or ""
    if parts.scheme in ("https", "wss"):
        return address
    try:
        ipaddress.ip_address(host)
        return address
    except ValueError:
        pass
    try:
        ips = await netguard.resolve(host)
    except (ValueError, OSError):
        raise BrowserUnavailable(f"The browser service's host {host} does not resolve.") from None
    ip = ips[0]
    netloc = (f"[{ip}]" if ":" in ip else ip) + (f":{parts.port}" if parts.port else "")
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, ""))


def proxy_option(config: Any, secret: str | None) -> dict[str, str] | None:
    if config.connection != "proxy":
        return None
    proxy = {"server": config.proxy_url}
    if secret:
        username, _, password = secret.partition(":")
        proxy.update(username=username, password=password)
    return proxy


@dataclass
class BrowseState:
    """The browse_web task in this tab: what was asked, the model's memory, the steps so far."""

    task: str = ""
    start_url: str = ""
    memory: str = ""
    history: list[str] = field(default_factory=list)
    steps: int = 0
    # The replay cache (replay.py): this task's key for the person, the clicks recorded so far (None once a
    # field was filled: recording stops there), how many clicks came from an earlier time.
    replay_key: str | None = None
    recording: list[dict[str, str]] | None = None
    replayed: int = 0


@dataclass
class BrowserSession:
    config: Any
    secret: str | None = None
    policy: RequestPolicy = field(default_factory=RequestPolicy)
    state: BrowseState = field(default_factory=BrowseState)
    _pw: Any = None
    _browser: Any = None
    context: Any = None
    page: Any = None
    _elements: list[Any] = field(default_factory=list)
    _lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    _home: Any = None  # the agent's one tab: the only page that may load anything
    # The path a page's WebSocket constructor asks before its handshake (page_js.SOCKET_GUARD); this browse's own.
    _socket_check: str = field(default_factory=lambda: f"/__socket-check-{secrets.token_hex(12)}")
    live: Any = None  # the live view of the browse_web call now on this tab (live.py), if any
    _workers: Any = None  # workers.WorkerGuard: the socket guard inside the tab's workers
    _address: str = ""

    def __post_init__(self) -> None:
        self.policy.allowed_domains = self.config.allowed_domains
        self.policy.browser_endpoint = (self.config.hosted_url if self.config.connection == "hosted"
                                        else cdp_address(self.config))

    # ------------------------------------------------------------ lifecycle

    async def start(self) -> None:
        if self.page is not None:
            return
        # Checked again here, not only at publish: a frozen version keeps its cdp_url after the operator
        # removed that host from BROWSER_CDP_ALLOWED_HOSTS, and a proxy's name may now point inside.
        refusal = await asyncio.to_thread(service_refusal, self.config)
        if refusal is not None:
            raise BrowserUnavailable(refusal)
        address = self._address = await endpoint(self.config, self.secret)
        try:
            if self.config.connection == "hosted":
                # The hosted browser's address carries the binding's key: a connection of this browse's own,
                # never one another binding (another organization's) would reuse.
                self._pw = await _playwright()().start()
                self._browser = await self._pw.chromium.connect_over_cdp(
                    address, timeout=settings.BROWSER_CONNECT_TIMEOUT_SECONDS * 1000)
                user_agent = await _desktop_user_agent(self._browser)
            else:
                shared = await _shared_connection(address)
                self._browser, user_agent = shared.browser, shared.user_agent
            options: dict[str, Any] = {
                "service_workers": "block",  # a service worker's requests would bypass the page's guard
                "viewport": {"width": self.config.preview_width, "height": 768},
                "user_agent": user_agent,
                "accept_downloads": False,
            }
            if self.config.timezone:
                options["timezone_id"] = self.config.timezone
            if self.config.locale:
                options["locale"] = self.config.locale
            proxy = proxy_option(self.config, self.secret)
            if proxy:
                options["proxy"] = proxy
            # A context of its own: in a browser many share, the default one would keep a cookie one person's
            # agent set and hand the next one that session.
            self.context = await self._browser.new_context(**options)
            await self.context.add_init_script(page_js.DESKTOP)
            # A page's WebSocket is no request Fetch pauses: its constructor asks `_route` first.
            await self.context.add_init_script(self._socket_guard())
            await self.context.add_init_script(page_js.NO_SHARED_WORKERS)  # workers.py says why
            await self.context.route("**/*", self._route)
            self.context.on("page", lambda page: asyncio.ensure_future(self._on_page(page)))
            self.page = await self.context.new_page()
            await self._guard(self.page)
            self._home = self.page
        except BrowserUnavailable:
            await self.close()
            raise
        except Exception as exc:
            await self.close()
            logger.warning("browser service unreachable: %s", type(exc).__name__)
            raise BrowserUnavailable(
                "The browser service is not responding; an operator of this deployment can check it "
                f"({type(exc).__name__}).") from None

    def _socket_guard(self) -> str:
        return page_js.SOCKET_GUARD.replace("__CHECK__", self._socket_check)

    async def close(self) -> None:
        if self.live is not None:
            live, self.live = self.live, None
            await live.stop()
        if self._workers is not None:
            workers, self._workers = self._workers, None
            await workers.close()
        # The browse's own context (its pages close with it). The browser connection is closed only when it is
        # this browse's own (a hosted browser's); the operator's service's is shared (`_shared_connection`).
        closers = (self.context, self._browser) if self._pw is not None else (self.context,)
        for closer in closers:
            if closer is not None:
                try:
                    await closer.close()
                except Exception:  # already gone with the browser
                    logger.debug("browser close", exc_info=True)
        if self._pw is not None:
            try:
                await self._pw.stop()
            except Exception:
                logger.debug("playwright stop", exc_info=True)
        self.context = self._browser = self._pw = self.page = self._home = None

    # ------------------------------------------------------------ the guard

    async def _route(self, route: Any) -> None:
        """Playwright's interception: the first request of every page of the context, popups included.

        It does not see redirect hops, and neither does a guard attached to a new tab once its first request is
        under way, so only the agent's tab (guarded before it loads anything) may load a page: a new tab's load
        (a target=_blank link, window.open) is stopped, the tab closed, and the address loaded in the agent's
        tab instead — one tab in its hands, every hop seen."""
        request = route.request
        if urlsplit(request.url).path == self._socket_check:
            await self._answer_socket_check(route)
            return
        reason = await self.policy.check(request.url)
        if reason is not None:
            await route.abort("blockedbyclient")
            return
        page = _page_of(request)
        if page is not self._home and request.is_navigation_request() and (page is None
                                                                             or request.frame == page.main_frame):
            await route.abort("blockedbyclient")
            asyncio.ensure_future(self._follow_in_tab(request.url))
            return
        await route.continue_()

    async def _follow_in_tab(self, url: str) -> None:
        home = self._home
        if home is None or home.is_closed():
            return
        try:
            await home.goto(url, wait_until="domcontentloaded", timeout=NAVIGATION_TIMEOUT_MS)
        except Exception:  # refused by the guard, or the tab closed: the next read shows the page as it is
            logger.debug("new tab followed in the agent's tab", exc_info=True)

    async def _on_page(self, page: Any) -> None:
        """A page the context opened: the agent's own tab gets its guard; any other tab is closed (its load goes
        to the agent's tab, see `_route`)."""
        if self._home is None or page is self._home:
            return
        try:
            await page.close()
        except Exception:
            logger.debug("new tab close", exc_info=True)

    async def _answer_socket_check(self, route: Any) -> None:
        """A page's WebSocket constructor asking whether its address may be reached (page_js.SOCKET_GUARD). Answered
        here, so the question never leaves the browser; "ok" only when the policy lets the socket's address go."""
        allowed = await self._socket_allowed(route.request.url)
        await route.fulfill(status=200, body="ok" if allowed else "no", content_type="text/plain",
                            headers={"Access-Control-Allow-Origin": "*", "Cache-Control": "no-store"})

    async def _socket_allowed(self, check_url: str) -> bool:
        """The answer to one socket check (its address in `u`): asked by the route or the worker guard, whichever
        pauses the question first (workers.py says why both do)."""
        url = (parse_qs(urlsplit(check_url).query).get("u") or [""])[0]
        reason = await self.policy.check(url) if url else "no address"
        return reason is None

    async def _guard(self, page: Any) -> None:
        """Every request of this page, every redirect hop included, paused until the policy answers."""
        session = await self.context.new_cdp_session(page)

        async def paused(event: dict[str, Any]) -> None:
            url = event["request"]["url"]
            try:
                reason = await self.policy.check(url)
                if reason is None:
                    await session.send("Fetch.continueRequest", {"requestId": event["requestId"]})
                else:
                    await session.send("Fetch.failRequest",
                                       {"requestId": event["requestId"], "errorReason": "BlockedByClient"})
            except Exception:  # the page closed meanwhile
                logger.debug("browser guard", exc_info=True)

        session.on("Fetch.requestPaused", lambda event: asyncio.ensure_future(paused(event)))
        await session.send("Fetch.enable", {"patterns": [{"urlPattern": "*", "requestStage": "Request"}]})
        await self._guard_workers(session)

    async def _guard_workers(self, session: Any) -> None:
        """The socket guard in the page's workers too (workers.py), before their scripts run. Not for a hosted
        browser: it runs on the provider's network, not this deployment's, and a second connection to its
        endpoint would be a second browser."""
        if self.config.connection == "hosted":
            return
        from capabilities.browser.workers import WorkerGuard

        target = (await session.send("Target.getTargetInfo"))["targetInfo"]
        if self._workers is None:
            self._workers = WorkerGuard(self._socket_guard(), on_lost=self._guard_lost,
                                        check_path=self._socket_check, answer=self._socket_allowed,
                                        refusal=self.policy.check)
            await self._workers.start(self._address)
        await self._workers.watch(target["targetId"])

    def _guard_lost(self) -> None:
        if self.context is not None:
            asyncio.ensure_future(self.context.close())

    # ------------------------------------------------------------ reading

    async def read(self, *, screenshot: bool = False) -> PageView:
        """The page as it is now. A page that is still navigating (a redirect, a refused request's error page,
        a form that just posted) destroys the document being read; wait for the next one and read that."""
        for attempt in range(READ_ATTEMPTS):
            page = self._current_page()
            try:
                await page.wait_for_load_state("domcontentloaded", timeout=5000)
            except Exception:
                logger.debug("page still loading", exc_info=True)
            try:
                return await self._read_once(page, screenshot)
            except Exception as exc:
                if not _navigated_away(exc) or attempt == READ_ATTEMPTS - 1:
                    raise
                await asyncio.sleep(0.2 * (attempt + 1))
        raise AssertionError("unreachable")  # the loop returns or raises

    async def _read_once(self, page: Any, screenshot: bool) -> PageView:
        # Patchright's isolated world (its default): the DOM is the page's, the script's globals are not, so a
        # page can neither see the reader nor hand it a patched `querySelectorAll`.
        handle = await page.evaluate_handle(page_js.COLLECT, [self.config.candidate_cap, MAX_TEXT])
        try:
            data = await (await handle.get_property("rows")).json_value()
            text = await (await handle.get_property("text")).json_value()
            truncated = await (await handle.get_property("truncated")).json_value()
            elements = await (await handle.get_property("els")).get_properties()
            found = [elements[str(i)].as_element() for i in range(len(data))]
        finally:
            try:
                await handle.dispose()
            except Exception:  # the document it lived in is gone
                logger.debug("handle dispose", exc_info=True)
        shot = await page.screenshot(type="png") if screenshot else None
        title = await page.title()
        self._elements = found
        return PageView(url=page.url, title=title, rows=data, text=text, truncated=bool(truncated), screenshot=shot)

    def _current_page(self) -> Any:
        if self.page is None or self.page.is_closed():
            raise ActionFailed("No page is open: open one with a URL first.")
        return self.page

    def _element(self, index: int) -> Any:
        if not 1 <= index <= len(self._elements):
            raise ActionFailed(f"There is no element [{index}] on this page (rows 1-{len(self._elements)}).")
        element = self._elements[index - 1]
        if element is None:
            raise ActionFailed(f"Element [{index}] is not an element.")
        return element

    # ------------------------------------------------------------ actions

    async def open(self, url: str) -> None:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https"):
            raise ActionFailed("Give a full http(s) URL.")
        reason = await self.policy.refusal(url)
        if reason is not None:
            raise ActionFailed(f"Refused: {reason}")
        await self.start()
        await self._goto(url)

    async def _goto(self, url: str) -> None:
        page = self._current_page()
        refused_before = len(self.policy.refused)
        try:
            await page.goto(url, wait_until="domcontentloaded", timeout=NAVIGATION_TIMEOUT_MS)
        except Exception as exc:
            if len(self.policy.refused) > refused_before and "ERR_BLOCKED_BY_CLIENT" in str(exc):
                await self._error_page_committed(page)
                raise ActionFailed(f"Refused: the page led to {self.policy.refused[-1]}, and the browser did not "
                                   f"send that request. {self.policy.reasons[-1]}") from None
            await self._stop_loading(page)
            raise ActionFailed(f"The page did not load ({_short(exc)}).") from None

    async def _stop_loading(self, page: Any) -> None:
        """Stop a navigation that did not finish. Left going (a server that never answers), it is not only this
        browse's: the browser is shared, and a new connection to it (a hosted browser's, or the shared one after
        a restart) waits on each page's pending navigation (Playwright's connect enables every page of the
        browser, `_shared_connection` says more) until it times out."""
        try:
            session = await self.context.new_cdp_session(page)
            try:
                await session.send("Page.stopLoading")
            finally:
                await session.detach()
        except Exception:  # the page or browser went away meanwhile
            logger.debug("browser stop loading", exc_info=True)

    async def _error_page_committed(self, page: Any) -> None:
        """Chromium replaces a refused navigation with its error page just after `goto` gives up; read that
        page, not the one it replaces."""
        if page.url.startswith("chrome-error:"):
            return
        try:
            await page.wait_for_url(lambda address: address.startswith("chrome-error:"), timeout=3000,
                                    wait_until="commit")
        except Exception:
            logger.debug("no error page after a refused navigation", exc_info=True)

    async def click(self, index: int) -> None:
        element = self._element(index)
        try:
            await element.click(timeout=ACTION_TIMEOUT_MS)
        except Exception as exc:
            raise ActionFailed(f"Could not click [{index}] ({_short(exc)}).") from None
        await self._settle()

    async def type(self, index: int, text: str, submit: bool = False) -> None:
        element = self._element(index)
        try:
            await element.fill(text, timeout=ACTION_TIMEOUT_MS)
            if submit:
                await element.press("Enter", timeout=ACTION_TIMEOUT_MS)
        except Exception as exc:
            raise ActionFailed(f"Could not type into [{index}] ({_short(exc)}).") from None
        await self._settle()

    async def select(self, index: int, option: str) -> None:
        element = self._element(index)
        try:
            try:
                await element.select_option(label=option, timeout=ACTION_TIMEOUT_MS)
            except Exception:
                await element.select_option(value=option, timeout=ACTION_TIMEOUT_MS)
        except Exception as exc:
            raise ActionFailed(f"Could not choose {option!r} in [{index}] ({_short(exc)}).") from None
        await self._settle()

    async def scroll(self, direction: str) -> None:
        page = self._current_page()
        height = (page.viewport_size or {}).get("height", 768)
        await page.mouse.wheel(0, -height * 0.8 if direction == "up" else height * 0.8)
        await asyncio.sleep(0.2)

    async def back(self) -> None:
        page = self._current_page()
        try:
            await page.go_back(wait_until="domcontentloaded", timeout=NAVIGATION_TIMEOUT_MS)
        except Exception as exc:
            raise ActionFailed(f"Could not go back ({_short(exc)}).") from None

    async def _settle(self) -> None:
        """After an action that may navigate: let the next document start and its DOM arrive."""
        await asyncio.sleep(0.3)
        page = self._current_page()
        try:
            await page.wait_for_load_state("domcontentloaded", timeout=5000)
        except Exception:
            logger.debug("page still loading after an action", exc_info=True)


async def _desktop_user_agent(browser: Any) -> str:
    """The browser's own user agent, without the headless shell's `HeadlessChrome` marker."""
    session = await browser.new_browser_cdp_session()
    try:
        version = await session.send("Browser.getVersion")
    finally:
        await session.detach()
    return str(version.get("userAgent", "")).replace("HeadlessChrome", "Chrome")


# ------------------------------------------------------------ one connection per loop and browser service
#
# Why hand-written: Playwright's `connect_over_cdp` attaches to every page the browser has, in every context, and
# waits until each one answered its setup (`CRBrowser.connect` → `_waitForAllPagesToBeInitialized`); no option
# of connect_over_cdp limits it to some contexts or skips the wait (microsoft/playwright #41093, #42730). A
# connection per browse on a browser every organization shares let one page whose renderer does not answer (a
# page of organization A's browse running `for(;;){}`) make every other organization's browse time out while
# A's kept it open. So a browse on the operator's service does not connect: every browse on a loop uses the one
# connection to that address, opened once (the first browse's connect, which the ones starting meanwhile
# await), and makes only its own context and page on it — `new_context`/`new_page` wait on their own page only.
# A connection that drops (the service restarted) is forgotten and the next browse connects again; it is closed
# with its loop (`_Connection.keep`: asyncio.run, asgiref and the runs loop cancel what is left on a loop before
# it ends). Not for a hosted browser: its address carries a binding's key (`endpoint`), so each browse keeps a
# connection of its own there.

class _Connection:
    """One Playwright driver and its connection to one browser service, shared by the browses of one loop."""

    def __init__(self, address: str, pw: Any, browser: Any, user_agent: str) -> None:
        self.address = address
        self.pw = pw
        self.browser = browser
        self.user_agent = user_agent
        self.gone = asyncio.Event()
        self.stopped = False  # the driver stopped (the connection is closed for good)
        browser.on("disconnected", lambda *_: self.gone.set())
        self.keeper = asyncio.ensure_future(self.keep())

    def usable(self) -> bool:
        return not self.gone.is_set() and self.browser.is_connected()

    async def keep(self) -> None:
        """Until the connection drops or the loop's remaining tasks are cancelled; then the driver stops."""
        try:
            await self.gone.wait()
        finally:
            _forget(asyncio.get_running_loop(), self)
            # Stopping the driver drops the connection (the service and its contexts stay); `Browser.close()`
            # is not called, it would wait on the browser's pages. Bounded: the loop's end waits on it.
            try:
                await asyncio.wait_for(self.pw.stop(), 30)
                await self._driver_exited()
                self.stopped = True
            except Exception:
                logger.debug("shared playwright stop", exc_info=True)

    async def _driver_exited(self) -> None:
        """Wait until the driver process is reaped. At a loop's end asyncio cancels the driver's reader task
        (Playwright's, which would reap it) beside this one, and a process reaped after its loop closed is an
        'Event loop is closed' error from the subprocess transport. Playwright has no public handle on the
        process, hence its private one, read defensively."""
        transport = getattr(getattr(getattr(self.pw, "_impl_obj", None), "_connection", None), "_transport", None)
        process = getattr(transport, "_proc", None)
        if process is not None and process.returncode is None:
            await asyncio.wait_for(process.wait(), 10)


_connections_lock = threading.Lock()  # the maps are read from every loop's thread
_connections: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, _Connection]] = (
    weakref.WeakKeyDictionary())
_connecting: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, asyncio.Future[_Connection]]] = (
    weakref.WeakKeyDictionary())


def _forget(loop: asyncio.AbstractEventLoop, connection: _Connection) -> None:
    with _connections_lock:
        per_loop = _connections.get(loop, {})
        if per_loop.get(connection.address) is connection:
            del per_loop[connection.address]


async def _shared_connection(address: str) -> _Connection:
    """This loop's connection to `address`, connected on first use; browses starting meanwhile await that one
    connect (its failure is theirs too)."""
    loop = asyncio.get_running_loop()
    with _connections_lock:
        for closed in [other for other in _connections if other.is_closed()]:  # a loop ended without its keeper
            del _connections[closed]
        connection = _connections.setdefault(loop, {}).get(address)
        if connection is not None and connection.usable():
            return connection
        if connection is not None:
            del _connections[loop][address]
            connection.gone.set()  # its keeper stops its driver
        pending = _connecting.setdefault(loop, {}).get(address)
        if pending is None:
            pending = loop.create_future()
            _connecting[loop][address] = pending
            mine = True
        else:
            mine = False
    if not mine:
        return await asyncio.shield(pending)
    try:
        connection = await _connect(address)
    except BaseException as exc:
        # A cancelled first browse fails the ones waiting on its connect as a refused connect would.
        pending.set_exception(exc if isinstance(exc, Exception) else RuntimeError("connect cancelled"))
        pending.exception()  # retrieved: no "never retrieved" warning when no other browse waited
        raise
    finally:
        with _connections_lock:
            _connecting.get(loop, {}).pop(address, None)
    with _connections_lock:
        _connections.setdefault(loop, {})[address] = connection
    pending.set_result(connection)
    return connection


async def _connect(address: str) -> _Connection:
    pw = await _playwright()().start()
    try:
        browser = await pw.chromium.connect_over_cdp(address, timeout=settings.BROWSER_CONNECT_TIMEOUT_SECONDS * 1000)
        return _Connection(address, pw, browser, await _desktop_user_agent(browser))
    except BaseException:
        try:
            await pw.stop()
        except Exception:
            logger.debug("playwright stop", exc_info=True)
        raise


def _page_of(request: Any) -> Any:
    try:
        return request.frame.page
    except Exception:  # a request with no frame (a worker's): the context route alone checks it
        return None


def _navigated_away(exc: BaseException) -> bool:
    message = str(exc)
    return any(marker in message for marker in _NAVIGATION_ERRORS)


def _short(exc: BaseException) -> str:
    return str(exc).split("\n")[0][:200] or type(exc).__name__


def service_refusal(config: Any) -> str | None:
    """Why this binding may not use its browser service now (publish's checks, read again), or None. Not the
    allowed_domains ones: the policy checks each request against the operator's list as it is now."""
    from capabilities.browser.config import service_problems

    problems = service_problems(config)
    return problems[0][1] if problems else None


def own_service() -> str:
    """This deployment's own browser service (settings.BROWSER_CDP_URL; `make run` sets it to the chromium it
    starts), or "" when the operator runs none."""
    return str(getattr(settings, "BROWSER_CDP_URL", "") or "").strip()


def cdp_address(config: Any) -> str:
    """The DevTools endpoint a binding browses with: its own cdp_url, else the deployment's browser service —
    read when the browse starts, so a version published with the default follows the operator's service."""
    return (getattr(config, "cdp_url", "") or "").strip() or own_service()


def cdp_host_allowed(url: str) -> bool:
    """The operator's list of browser services (BROWSER_CDP_ALLOWED_HOSTS; an empty list allows none), and the
    deployment's own service, which the operator named."""
    if url and url == own_service():
        return True
    host = (urlsplit(url).hostname or "").lower()
    entries = [str(e).strip().lower() for e in getattr(settings, "BROWSER_CDP_ALLOWED_HOSTS", []) or []]
    return bool(host) and any(e and e == host for e in entries)

"""The browser's direct tools on Debian's Chromium against local pages: the form filled step by step, every
request into the deployment's network refused in the browser (also after a redirect and from a page's own
fetch), two browses never sharing cookies, and the operator's list of browser services at publish."""

from __future__ import annotations

import asyncio
import contextlib
from urllib.parse import urlencode

import pytest

from capabilities import registry
from capabilities.browser.config import BrowserConfig, publish_problems
from tests.capabilities.helpers import run, spec
from tests.fakes.web_pages import INTRANET, OTHER_SITE, SITE, browser_env, chromium, internal, site  # noqa: F401

pytestmark = [pytest.mark.django_db, pytest.mark.browser]


def browser_spec(chromium, **config):
    return spec({"id": "browser_use", "config": {"cdp_url": chromium.cdp_url, **config}})


def calls(*steps):
    return list(steps)


def test_the_direct_tools_fill_a_form_step_by_step(browser_env, site):
    url = f"http://{SITE}:{site.port}/form"
    outcome = asyncio.run(run(browser_spec(browser_env), calls(
        ("browser_open", {"url": url}),
        ("browser_type", {"element": 1, "text": "Ada"}),
        ("browser_type", {"element": 2, "text": "ada@example.com"}),
        ("browser_select", {"element": 3, "option": "Pro"}),
        ("browser_click", {"element": 4}),
    )))
    opened, typed_name, typed_email, chose, clicked = outcome.returns
    assert "[1] text 'Name' (empty)" in opened and "[4] button 'Send'" in opened
    assert "[2] email 'Email' (filled)" in typed_email
    assert "ada@example.com" not in typed_email and "Ada" not in typed_name.split("\n\n", 1)[1]
    assert "selected 'Pro'" in chose
    assert "Thanks, Ada" in clicked and f"http://{SITE}:{site.port}/thanks" in clicked
    posted = [hit for hit in site.hits if hit.method == "POST"]
    assert [hit.form for hit in posted] == [{"name": ["Ada"], "email": ["ada@example.com"], "plan": ["Pro"]}]


@pytest.mark.parametrize("target", [
    "http://127.0.0.1:{internal}/secret",
    f"http://{INTRANET}:{{internal}}/secret",
    "http://169.254.169.254/latest/meta-data/",
    "http://[::ffff:127.0.0.1]:{internal}/secret",
])
def test_a_redirect_into_the_deployment_is_refused_in_the_browser(browser_env, site, internal, target):
    target = target.format(internal=internal.port)
    url = f"http://{SITE}:{site.port}/redirect?to={target}"
    outcome = asyncio.run(run(browser_spec(browser_env), calls(("browser_open", {"url": url}))))
    [answer] = outcome.returns
    assert "Refused" in answer and "internal secret" not in answer
    assert site.paths() == ["/redirect"]  # the first hop went out, the redirect did not
    assert internal.hits == []


def test_a_page_fetching_an_internal_address_or_the_cdp_endpoint_is_refused(browser_env, site, internal):
    targets = [f"http://{INTRANET}:{internal.port}/secret", f"{browser_env.cdp_url}/json/version"]
    for target in targets:
        outcome = asyncio.run(run(browser_spec(browser_env), calls(
            ("browser_open", {"url": f"http://{SITE}:{site.port}/fetcher?to={target}"}),
            ("browser_read", {}),
        )))
        assert "Title: refused" in outcome.returns[-1], outcome.returns[-1]
    assert internal.hits == []


def test_a_host_listed_in_allowed_domains_may_be_browsed_on_an_internal_address(browser_env, site, internal):
    """The control for the refusals above: the same redirect reaches the internal page once it is listed."""
    url = f"http://{SITE}:{site.port}/redirect?to=http://{INTRANET}:{internal.port}/secret"
    outcome = asyncio.run(run(browser_spec(browser_env, allowed_domains=[SITE, INTRANET]),
                              calls(("browser_open", {"url": url}))))
    assert "internal secret 7731" in outcome.returns[0]
    assert internal.paths() == ["/secret"]


def test_allowed_domains_refuses_any_other_host(browser_env, site):
    outcome = asyncio.run(run(browser_spec(browser_env, allowed_domains=["*.example.com"]),
                              calls(("browser_open", {"url": f"http://{SITE}:{site.port}/form"}))))
    assert "not in this agent's allowed_domains" in outcome.returns[0]
    assert site.hits == []


def test_two_browses_never_share_cookies(browser_env, site):
    base = f"http://{SITE}:{site.port}"
    first = asyncio.run(run(browser_spec(browser_env), calls(
        ("browser_open", {"url": f"{base}/cookie/set"}), ("browser_open", {"url": f"{base}/cookie/show"}))))
    assert "Cookie: session=alice" in first.returns[-1]
    second = asyncio.run(run(browser_spec(browser_env), calls(("browser_open", {"url": f"{base}/cookie/show"}))))
    assert "Cookie: no cookie" in second.returns[0]


def test_the_page_sees_a_desktop_browser_not_a_headless_one(browser_env, site):
    """On localhost (a secure context, so client hints are sent and navigator.userAgentData exists) neither the
    page nor its server sees a headless marker."""
    from capabilities.browser.session import BrowserSession

    async def probe():
        tab = BrowserSession(config=BrowserConfig(cdp_url=browser_env.cdp_url, allowed_domains=["localhost"]))
        await tab.open(f"http://localhost:{site.port}/form")
        try:
            return await tab.page.evaluate(
                "[navigator.userAgent, navigator.webdriver, JSON.stringify(navigator.userAgentData.brands)]")
        finally:
            await tab.close()

    user_agent, webdriver, brands = asyncio.run(probe())
    assert "HeadlessChrome" not in user_agent and "Chrome/" in user_agent
    assert webdriver is False and "Headless" not in brands
    hit = site.hits[0]
    assert hit.path == "/form" and "sec-ch-ua" in hit.headers, "the control: client hints were sent"
    assert not [value for value in hit.headers.values() if "headless" in value.lower()]


def test_the_browser_not_answering_is_an_answer_not_a_failed_run(browser_env):
    outcome = asyncio.run(run(spec({"id": "browser_use", "config": {"cdp_url": "http://127.0.0.1:9"}}),
                              calls(("browser_open", {"url": "https://example.com/"}))))
    assert "browser service is not responding" in outcome.returns[0]


def test_publish_refuses_a_browser_service_the_operator_does_not_list(settings, org):
    settings.BROWSER_CDP_ALLOWED_HOSTS = []
    config = BrowserConfig(cdp_url="http://browser:9222")
    assert [f for f, _ in publish_problems(config)] == ["cdp_url"]
    settings.BROWSER_CDP_ALLOWED_HOSTS = ["browser"]
    assert publish_problems(config) == []
    problems = registry.validate_bindings(
        spec({"id": "browser_use", "config": {"cdp_url": "http://other:9222"}}), organization=org,
        can_view_secret=lambda secret_id: True)
    assert [p["field"] for p in problems] == ["capabilities.0.config.cdp_url"]
    assert "BROWSER_CDP_ALLOWED_HOSTS" in problems[0]["message"]


@pytest.mark.parametrize("config", [
    {"allowed_domains": []},
    {"allowed_domains": ["http://example.com"]},
    {"allowed_domains": ["ex*ample.com"]},
    {"connection": "proxy", "proxy_url": "ftp://proxy:1"},
    {"connection": "hosted", "hosted_url": "http://cloud.example/"},
    {"timezone": "Mars/Olympus"},
    {"max_steps": 0},
    {"preview_width": 200},
])
def test_settings_the_capability_cannot_honour_are_refused(config):
    from pydantic import ValidationError

    with pytest.raises(ValidationError):
        BrowserConfig(cdp_url="http://browser:9222", **config)


def test_a_proxy_inside_the_deployment_is_refused_at_publish(settings):
    settings.BROWSER_CDP_ALLOWED_HOSTS = ["browser"]
    config = BrowserConfig(cdp_url="http://browser:9222", connection="proxy", proxy_url="http://10.0.0.5:3128")
    assert [f for f, _ in publish_problems(config)] == ["proxy_url"]


@pytest.mark.parametrize("listed", [False, True])
def test_a_page_opening_a_websocket_into_the_deployment_is_refused(browser_env, site, internal, listed):
    """A WebSocket is not a request CDP's Fetch pauses: the page's WebSocket constructor asks the browse first
    (page_js.SOCKET_GUARD). The control (the host listed in allowed_domains) shows the handshake would otherwise
    reach the internal server."""
    from capabilities.browser.session import BrowserSession

    config = BrowserConfig(cdp_url=browser_env.cdp_url, allowed_domains=[SITE, INTRANET] if listed else None)
    target = f"ws://{INTRANET}:{internal.port}/ws"

    async def open_socket():
        tab = BrowserSession(config=config)
        try:
            await tab.open(f"http://{SITE}:{site.port}/socket?to={target}")
            await tab.page.wait_for_function("document.title === 'closed'", timeout=10000)
            return tab.policy.refused
        finally:
            await tab.close()

    refused = asyncio.run(open_socket())
    if listed:
        assert internal.paths() == ["/ws"] and refused == []
    else:
        assert internal.hits == [] and refused == [target]


def test_a_browser_service_the_operator_stopped_allowing_is_refused_when_a_browse_starts(browser_env, site, settings):
    """The list is read again when a browse starts: a version published while the host was allowed does not keep
    a browser the operator has since removed."""
    settings.BROWSER_CDP_ALLOWED_HOSTS = ["browser"]
    outcome = asyncio.run(run(browser_spec(browser_env), calls(
        ("browser_open", {"url": f"http://{SITE}:{site.port}/form"}))))
    assert "BROWSER_CDP_ALLOWED_HOSTS" in outcome.returns[0]
    assert site.hits == []


def test_a_proxy_inside_the_deployment_is_refused_when_a_browse_starts(browser_env, site):
    config = BrowserConfig(cdp_url=browser_env.cdp_url, connection="proxy", proxy_url="http://169.254.169.254:3128")
    outcome = asyncio.run(run(spec({"id": "browser_use", "config": config.model_dump()}), calls(
        ("browser_open", {"url": f"http://{SITE}:{site.port}/form"}))))
    assert "metadata" in outcome.returns[0] or "169.254.169.254" in outcome.returns[0]
    assert site.hits == []


def test_without_the_browser_extra_the_tool_fails_visibly_naming_the_install_line(browser_env, site, monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "patchright.async_api", None)  # what an install without the extra has
    outcome = asyncio.run(run(browser_spec(browser_env), calls(
        ("browser_open", {"url": f"http://{SITE}:{site.port}/form"}))))
    assert 'pip install "agenticos[browser]"' in outcome.returns[0]
    assert site.hits == []


def test_a_named_browser_service_is_resolved_once_and_reached_by_its_address(monkeypatch):
    from agenticos import netguard
    from capabilities.browser.session import BrowserUnavailable, endpoint

    asked = []

    async def resolve(hostname):
        asked.append(hostname)
        return {"browser": ["10.9.8.7"], "v6browser": ["fd00::7"]}[hostname]

    monkeypatch.setattr(netguard, "resolve", resolve)
    assert asyncio.run(endpoint(BrowserConfig(cdp_url="http://browser:9222"), None)) == "http://10.9.8.7:9222"
    assert asyncio.run(endpoint(BrowserConfig(cdp_url="ws://v6browser:9222/devtools/browser/x"), None)) == (
        "ws://[fd00::7]:9222/devtools/browser/x")
    # TLS keeps the name its certificate was issued for.
    assert asyncio.run(endpoint(BrowserConfig(cdp_url="https://browser:9222"), None)) == "https://browser:9222"
    assert asked == ["browser", "v6browser"]
    hosted = BrowserConfig(connection="hosted", hosted_url="wss://cloud.example/connect?region=eu",
                           hosted_key_param="token")
    assert asyncio.run(endpoint(hosted, "k-123")) == "wss://cloud.example/connect?region=eu&token=k-123"
    with pytest.raises(BrowserUnavailable, match="needs its key"):
        asyncio.run(endpoint(hosted, None))


@pytest.mark.parametrize("hardened", [True, False])
def test_a_page_cannot_send_webrtc_packets_into_the_deployment(browser_env, site, hardened, settings):
    """UDP is no request any interception sees; the browser service's flags keep WebRTC off it. The control (a
    Chromium started without them) shows the page's STUN packets would otherwise reach a loopback port. That
    control is a Chromium just started on a machine busy with the other worker's tests: a CI run once saw it take
    more than 30 s to take its first client, so it gets the room a slow host's operator would give it."""
    import socket

    from capabilities.browser.session import BrowserSession
    from tests.fakes.web_pages import Chromium

    listener = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    listener.bind(("127.0.0.1", 0))
    listener.settimeout(10)
    port = listener.getsockname()[1]
    browser = browser_env if hardened else Chromium(host_rules=f"MAP {SITE} 127.0.0.1", hardened=False).start()
    settings.BROWSER_CONNECT_TIMEOUT_SECONDS = 120

    async def gather():
        tab = BrowserSession(config=BrowserConfig(cdp_url=browser.cdp_url))
        try:
            await tab.open(f"http://{SITE}:{site.port}/form")
            await tab.page.evaluate(f"""async () => {{
                window.pc = new RTCPeerConnection({{iceServers: [{{urls: 'stun:127.0.0.1:{port}'}}]}});
                pc.createDataChannel('x'); await pc.setLocalDescription(await pc.createOffer()); }}""",
                isolated_context=False)  # the page's own world, where wait_for_function looks
            if hardened:
                await tab.page.wait_for_function("pc.iceGatheringState === 'complete'", timeout=10000)
                listener.settimeout(0.01)
            return await asyncio.to_thread(_packets, listener)
        finally:
            await tab.close()

    try:
        packets = asyncio.run(gather())
    finally:
        listener.close()
        if not hardened:
            browser.stop()
    assert (packets == 0) if hardened else (packets > 0)


def _packets(listener) -> int:
    try:
        listener.recvfrom(2048)
    except TimeoutError:
        return 0
    return 1


def test_candidate_cap_limits_the_rows_one_read_offers(browser_env, site):
    outcome = asyncio.run(run(browser_spec(browser_env, candidate_cap=2), calls(
        ("browser_open", {"url": f"http://{SITE}:{site.port}/form"}),
        ("browser_click", {"element": 3}),
    )))
    opened, clicked = outcome.returns
    assert "[1] text 'Name'" in opened and "[2] email 'Email'" in opened and "[3]" not in opened
    assert "There is no element [3]" in clicked


@pytest.mark.parametrize("element", [1, 2])
def test_a_new_tab_redirected_into_the_deployment_is_refused(browser_env, site, internal, element):
    """A link with target=_blank and window.open make a page of their own, guarded from its first request: its
    redirect into the network is refused as in the agent's tab."""
    inner = f"http://{SITE}:{site.port}/redirect?to=http://{INTRANET}:{internal.port}/secret"
    outcome = asyncio.run(run(browser_spec(browser_env), calls(
        ("browser_open", {"url": f"http://{SITE}:{site.port}/popup?to={inner}"}),
        ("browser_click", {"element": element}),
        ("browser_read", {}),
    )))
    assert "/redirect" in site.paths(), "the control: the new tab did start"
    assert internal.hits == []
    assert "internal secret" not in "".join(outcome.returns)


@pytest.mark.parametrize("element", [1, 2])
def test_a_new_tab_opens_in_the_agents_own_tab(browser_env, site, element):
    target = f"http://{SITE}:{site.port}/flow/1"
    outcome = asyncio.run(run(browser_spec(browser_env), calls(
        ("browser_open", {"url": f"http://{SITE}:{site.port}/popup?to={target}"}),
        ("browser_click", {"element": element}),
        ("browser_read", {}),
    )))
    assert f"URL: {target}" in outcome.returns[-1] and "Boots" in outcome.returns[-1]


@pytest.mark.parametrize("frame_host", [SITE, OTHER_SITE])
def test_a_frame_redirected_into_the_deployment_is_refused(browser_env, site, internal, frame_host):
    """A same-site frame and a cross-site one (its own renderer process, a CDP target of its own)."""
    inner = f"http://{frame_host}:{site.port}/redirect?to=http://{INTRANET}:{internal.port}/secret"
    outcome = asyncio.run(run(browser_spec(browser_env), calls(
        ("browser_open", {"url": f"http://{SITE}:{site.port}/framed?to={inner}"}),
        ("browser_read", {}),
    )))
    assert site.paths()[:2] == ["/framed", "/redirect"], "the control: the frame did load"
    assert internal.hits == []
    assert "internal secret" not in "".join(outcome.returns)


@pytest.mark.parametrize("listed", [False, True])
def test_a_workers_fetch_into_the_deployment_is_refused(browser_env, site, internal, listed):
    """A dedicated worker is a target of its own; its requests are checked like the page's. The control lists the
    host, and the worker's fetch then reaches the internal server (its answer is CORS-blocked either way)."""
    from capabilities.browser.session import BrowserSession

    config = BrowserConfig(cdp_url=browser_env.cdp_url, allowed_domains=[SITE, INTRANET] if listed else None)

    async def work():
        tab = BrowserSession(config=config)
        try:
            await tab.open(f"http://{SITE}:{site.port}/worker?to=http://{INTRANET}:{internal.port}/secret")
            await tab.page.wait_for_function("document.title !== 'working'", timeout=10000)
        finally:
            await tab.close()

    asyncio.run(work())  # the worker's fetch has settled (refused, or blocked by CORS after it went out)
    if listed:
        assert internal.paths() == ["/secret"]
    else:
        assert internal.hits == []


@pytest.mark.parametrize(("kind", "listed"), [
    ("dedicated", False), ("script", False), ("nested", False), ("framed", False),
    ("dedicated", True), ("nested", True), ("framed", True),
])
def test_a_workers_websocket_into_the_deployment_is_refused(browser_env, site, internal, kind, listed):
    """No init script reaches a worker's scope: the browse holds each new worker (one from a blob, from a URL, one
    a worker starts, one in a cross-site frame) before its first line and installs the socket guard there
    (capabilities/browser/workers.py). The controls list the host, and the worker's handshake then reaches the
    internal server — so the refusal is the guard's, not a worker that never ran."""
    hosts = [SITE, OTHER_SITE, INTRANET] if listed else None
    target = f"ws://{INTRANET}:{internal.port}/ws"
    page = f"/worker-socket?{urlencode({'to': target, 'kind': 'dedicated' if kind == 'framed' else kind})}"

    async def open_socket():
        async with _browse(browser_env, site, page, kind == "framed", hosts=hosts) as tab:
            # A cross-site frame's worker tells its frame, which tells the page around it.
            await tab.page.wait_for_function("document.title === 'closed' || document.title === 'open'",
                                             timeout=10000)
            return await tab.page.title(), tab.policy.refused, list(tab._workers.guarded)

    title, refused, guarded = asyncio.run(open_socket())
    assert len(guarded) == (2 if kind == "nested" else 1), guarded
    if listed:
        assert internal.paths() == ["/ws"] and refused == []
    else:
        assert internal.hits == [] and refused == [target] and title == "closed"


async def _continued(route):
    """A route that lets every request pass unchecked, as Playwright does with one it has not matched."""
    await route.continue_()


@contextlib.asynccontextmanager
async def _browse(browser_env, site, page: str, framed: bool, *, passing: str = "", hosts=None):
    """A browse of `page` of the site, or of the same page in a cross-site frame of it, closed after; its route
    method `passing`, if named, lets every request through."""
    from capabilities.browser.session import BrowserSession

    tab = BrowserSession(config=BrowserConfig(cdp_url=browser_env.cdp_url, allowed_domains=hosts))
    if passing:
        setattr(tab, passing, _continued)
    try:
        if framed:
            inner = f"http://{OTHER_SITE}:{site.port}{page}"
            await tab.open(f"http://{SITE}:{site.port}/framed?{urlencode({'to': inner})}")
        else:
            await tab.open(f"http://{SITE}:{site.port}{page}")
        yield tab
    finally:
        await tab.close()


@pytest.mark.parametrize("framed", [False, True])
def test_a_workers_fetch_into_the_deployment_is_refused_where_the_route_lets_it_pass(browser_env, site, internal,
                                                                                     framed):
    """The route is no guard (workers.py: Playwright sends a request it has not matched on unrouted), so here it
    lets everything pass. A worker's fetch is still refused: the page's by session.py's guard, a cross-site
    frame's — which the page's session never sees — by the worker guard on the frame's own session. Before the
    latter, the framed worker's fetch reached the internal server."""
    worker = f"/worker?to=http://{INTRANET}:{internal.port}/secret"
    secret = f"http://{INTRANET}:{internal.port}/secret"

    async def work():
        async with _browse(browser_env, site, worker, framed, passing="_route") as tab:
            if framed:
                for _ in range(100):
                    frame = next((f for f in tab.page.frames if "/worker" in f.url), None)
                    if frame is not None:
                        break
                    await asyncio.sleep(0.1)
            else:
                frame = tab.page.main_frame
            # The worker's fetch has settled (refused, or blocked by CORS after it went out).
            await frame.wait_for_function("document.title !== 'working'", timeout=10000)
            return tab.policy.refused

    assert asyncio.run(work()) == [secret]
    assert internal.hits == []
    assert "/worker" in site.paths(), "the control: the worker's page did load"


@pytest.mark.parametrize("kind", ["dedicated", "nested", "framed"])
def test_a_workers_socket_check_is_answered_where_the_route_lets_it_pass(browser_env, site, internal, kind):
    """Playwright sends a paused request it has not matched to its own records on unrouted, which a nested worker's
    first request can be (workers.py says how): beside a CPU hog the nested case above failed 5 runs in 60 that
    way, its check answered 404 by the site. Made certain here: the route lets every check pass, as Playwright
    did, and the site answers 'ok' as a hostile one would (before the fix, the socket then reached the internal
    server). The worker guard answers the check on the page's session (the
    cross-site frame's for `framed`), so the socket is still refused and the question never reaches the site."""
    target = f"ws://{INTRANET}:{internal.port}/ws"
    page = f"/worker-socket?{urlencode({'to': target, 'kind': 'dedicated' if kind == 'framed' else kind})}"

    async def open_socket():
        async with _browse(browser_env, site, page, kind == "framed", passing="_answer_socket_check") as tab:
            await tab.page.wait_for_function("document.title === 'closed' || document.title === 'open'",
                                             timeout=10000)
            return await tab.page.title(), tab.policy.refused

    title, refused = asyncio.run(open_socket())
    assert not [path for path in site.paths() if path.startswith("/__socket-check-")], site.paths()
    assert internal.hits == [] and refused == [target] and title == "closed"


def test_a_browse_has_no_shared_workers(browser_env, site, internal):
    """A shared worker's requests are paused by nothing Chromium offers a client, so a page (or a fresh frame it
    makes) finds no SharedWorker to start, and its socket never opens. Control: the same page in a context of the
    same Chromium without the browse's scripts opens it."""
    from patchright.async_api import async_playwright

    from capabilities.browser.session import BrowserSession

    target = f"ws://{INTRANET}:{internal.port}/ws"
    page = f"http://{SITE}:{site.port}/worker-socket?{urlencode({'to': target, 'kind': 'shared'})}"
    done = "document.title !== 'connecting'"

    async def in_browse():
        tab = BrowserSession(config=BrowserConfig(cdp_url=browser_env.cdp_url))
        try:
            await tab.open(page)
            await tab.page.wait_for_function(done, timeout=10000)
            return await tab.page.title()
        finally:
            await tab.close()

    async def unguarded():
        async with async_playwright() as pw:
            browser = await pw.chromium.connect_over_cdp(browser_env.cdp_url)
            context = await browser.new_context()
            try:
                tab = await context.new_page()
                await tab.goto(page)
                await tab.wait_for_function(done, timeout=10000)
                return await tab.title()
            finally:
                await context.close()

    assert asyncio.run(in_browse()) == "no shared workers"
    assert internal.hits == []
    assert asyncio.run(unguarded()) == "closed" and internal.paths() == ["/ws"]


def test_a_browse_that_loses_its_worker_guard_is_stopped(browser_env, site):
    """Workers would start unheld once the guard's DevTools connection is gone, so the browse ends with it."""
    from capabilities.browser.session import BrowserSession

    async def lose_it():
        tab = BrowserSession(config=BrowserConfig(cdp_url=browser_env.cdp_url))
        try:
            await tab.open(f"http://{SITE}:{site.port}/form")
            assert not tab.page.is_closed()
            await tab._workers._socket.close()  # as a dropped connection would: the guard did not close it
            for _ in range(300):
                if tab.page.is_closed():
                    return True
                await asyncio.sleep(0.1)
            return False
        finally:
            await tab.close()

    assert asyncio.run(lose_it())


@pytest.mark.parametrize("how", ["frame", "proto", "popup", "blank", "twice", "stream"])
def test_a_websocket_built_around_the_wrapped_constructor_is_refused_too(browser_env, site, internal, how):
    """The ways around the check a page has: the native constructor from a fresh about:blank frame, through a
    socket's own prototype or from a new window's document, an address that reads differently the second time,
    and WebSocketStream (shipped in this Chromium, a handshake no interception sees either). The prototype, the
    second reading and WebSocketStream got through the first version of the check (page_js.SOCKET_GUARD says how
    each is closed); a frame's or a new window's document runs the check as any document does."""
    from capabilities.browser.session import BrowserSession

    config = BrowserConfig(cdp_url=browser_env.cdp_url)
    target = f"ws://{INTRANET}:{internal.port}/ws"

    async def open_socket():
        tab = BrowserSession(config=config)
        try:
            await tab.open(f"http://{SITE}:{site.port}/socket-around?{urlencode({'to': target, 'how': how})}")
            await tab.page.wait_for_function("document.title === 'closed' || document.title === 'open'",
                                             timeout=10000)
            return await tab.page.title()
        finally:
            await tab.close()

    title = asyncio.run(open_socket())
    assert internal.hits == [] and title == "closed"

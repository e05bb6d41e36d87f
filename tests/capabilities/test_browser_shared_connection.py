"""One connection per loop to the operator's browser service (session.py's `_shared_connection`): a page of one
organization's browse whose renderer does not answer never stops another organization's browse, two browses share
one connection with a context each, and a restarted service is connected to again."""

from __future__ import annotations

import asyncio

from capabilities.browser import session as browser_session
from capabilities.browser.config import BrowserConfig
from capabilities.browser.session import BrowserSession
from tests.fakes.web_pages import INTRANET, OTHER_SITE, SITE, Chromium, browser_env, chromium, site  # noqa: F401


def _tab(chromium) -> BrowserSession:
    return BrowserSession(config=BrowserConfig(cdp_url=chromium.cdp_url, allowed_domains=[SITE]))


async def _title_becomes(tab: BrowserSession, title: str) -> None:
    while (await tab.read()).title != title:
        await asyncio.sleep(0.2)


def test_a_wedged_page_of_one_organization_does_not_stop_another_organizations_browse(browser_env, site, settings):
    """Organization A's tab runs `for(;;){}` after it loaded: its renderer never answers again. Before, every browse
    connected anew, and Playwright's connect waits on every page of the browser, A's too: B's browse timed out
    ("The browser service is not responding") for as long as A's stayed open. B's browse now opens and reads its
    page; A's browse still closes."""

    async def both() -> tuple[str, bool]:
        org_a, org_b = _tab(browser_env), _tab(browser_env)
        try:
            await org_a.open(f"http://{SITE}:{site.port}/cookie/set")  # the service is up: a first connect
            await org_a.page.goto(f"http://{SITE}:{site.port}/wedge", wait_until="load")
            await asyncio.sleep(1)  # its timer fired: the renderer loops from now on
            # The bound a connect that waits on the wedged page would hit (the old way's failure), and room
            # enough for the machine's load otherwise.
            settings.BROWSER_CONNECT_TIMEOUT_SECONDS = 20
            await org_b.open(f"http://{SITE}:{site.port}/cookie/show")
            seen = (await org_b.read()).text
        finally:
            await org_b.close()
            await org_a.close()
        return seen, org_a.context is None

    seen, a_closed = asyncio.run(both())
    assert "Cookie: no cookie" in seen
    assert a_closed


def test_two_browses_on_one_loop_share_one_connection_with_a_context_each(browser_env, site):
    async def both() -> tuple[object, ...]:
        loop = asyncio.get_running_loop()
        ours, theirs = _tab(browser_env), _tab(browser_env)
        # Started together: the second awaits the first one's connect, it does not open one of its own.
        await asyncio.gather(ours.start(), theirs.start())
        connections = dict(browser_session._connections.get(loop, {}))
        try:
            await ours.open(f"http://{SITE}:{site.port}/flow/1")
            await theirs.open(f"http://{SITE}:{site.port}/cookie/show")
            own_pages = (ours.context.pages == [ours.page], theirs.context.pages == [theirs.page])
            shared = ours._browser is theirs._browser and ours.context is not theirs.context
            await ours.close()
            await theirs.open(f"http://{SITE}:{site.port}/flow/2")  # the other browse goes on
            still = (await theirs.read()).url
        finally:
            await ours.close()
            await theirs.close()
        connection = next(iter(connections.values()))
        return len(connections), shared, own_pages, still, connection

    count, shared, own_pages, still, connection = asyncio.run(both())
    assert count == 1 and shared
    assert own_pages == (True, True)
    assert still.endswith("/flow/2")
    # The loop ended: its connection was closed with it, its driver stopped.
    assert connection.keeper.done() and connection.stopped


def test_the_next_browse_connects_again_after_the_browser_service_restarted(browser_env, site):
    rules = f"MAP {SITE} 127.0.0.1, MAP {OTHER_SITE} 127.0.0.1, MAP {INTRANET} 127.0.0.1"
    first = Chromium(host_rules=rules).start()
    restarted: list[Chromium] = []

    async def across_a_restart() -> tuple[str, bool, str]:
        before = _tab(first)
        await before.open(f"http://{SITE}:{site.port}/flow/1")
        old = browser_session._connections[asyncio.get_running_loop()][await browser_session.endpoint(
            before.config, None)]
        await before.close()
        await asyncio.to_thread(first.stop)
        await asyncio.wait_for(old.gone.wait(), 120)  # the connection noticed the service went away
        restarted.append(await asyncio.to_thread(Chromium(host_rules=rules, port=first.port).start))
        after = _tab(restarted[0])
        try:
            await after.open(f"http://{SITE}:{site.port}/flow/2")
            return (await after.read()).url, after._browser is not old.browser, restarted[0].cdp_url
        finally:
            await after.close()

    try:
        url, reconnected, address = asyncio.run(across_a_restart())
    finally:
        first.stop()
        for browser in restarted:
            browser.stop()
    assert url.endswith("/flow/2") and reconnected
    assert address == first.cdp_url  # the same address: a restarted service, not another one

"""The shared browser never turns on the deployment's own services (issue 37, point 4).

On Debian's Chromium with the real policy, two organizations on the one browser service: another organization's
browse holds a tab whose URL carries its session token, while an agent whose author wrote
`allowed_domains: ["127.0.0.1"]` tries the browser's DevTools `/json/list` (every tab of every organization),
sandboxd, the web server, PostgreSQL, Redis and an internal page. An author's list opens no internal address; the
operator's BROWSER_ALLOWED_PRIVATE_HOSTS opens the internal page and never the deployment's own services. Stand-ins
(local HTTP servers) take the places of sandboxd, the web server and Redis, so "never reached" is a recorded
absence of requests, not a connection that happened to fail.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from agents import services
from agents.models import AgentVersion
from capabilities.browser.capability import BrowserRun
from capabilities.browser.config import BrowserConfig
from capabilities.browser.session import BrowserSession
from tests import factories
from tests.capabilities.helpers import deps, run, spec
from tests.fakes.web_pages import INTRANET, SITE, WebPages, browser_env, chromium, internal, site  # noqa: F401
from tests.runner.conftest import actor_of

pytestmark = [pytest.mark.django_db, pytest.mark.browser]

TOKEN = "sess-9c1e7d0a-other-organization"


@pytest.fixture
def stand_ins(settings):
    """sandboxd, the web server and Redis as this deployment's settings name them, each a recording server."""
    servers = {name: WebPages().start() for name in ("sandboxd", "web", "redis")}
    settings.SANDBOXD_URL = f"http://127.0.0.1:{servers['sandboxd'].port}"
    settings.PORT = servers["web"].port
    settings.REDIS_URL = f"redis://127.0.0.1:{servers['redis'].port}/0"
    yield servers
    for server in servers.values():
        server.stop()


def _agent(chromium, allowed: list[str]):
    return spec({"id": "browser_use", "config": {"cdp_url": chromium.cdp_url, "allowed_domains": allowed}})


async def _beside_another_organization(chromium, site, the_spec, calls, org, other):
    """Run `org`'s agent while `other`'s run holds a tab whose URL carries its session token."""
    theirs = BrowserRun(config=BrowserConfig(cdp_url=chromium.cdp_url, allowed_domains=[SITE]), run_id="theirs",
                        organization_id=str(other.pk))
    await (await theirs.tab()).open(f"http://{SITE}:{site.port}/form?session={TOKEN}")
    try:
        return await run(the_spec, calls, deps(organization_id=str(org.pk)))
    finally:
        await theirs.close()


def _urls(chromium, stand_ins, internal) -> dict[str, str]:
    return {
        "devtools": f"http://127.0.0.1:{chromium.port}/json/list",
        "sandboxd": f"http://127.0.0.1:{stand_ins['sandboxd'].port}/healthz",
        "web": f"http://127.0.0.1:{stand_ins['web'].port}/healthz",
        "redis": f"http://127.0.0.1:{stand_ins['redis'].port}/",
        "internal": f"http://127.0.0.1:{internal.port}/secret",
    }


def test_an_authors_allowed_domains_alone_opens_no_internal_address(browser_env, site, internal, stand_ins,
                                                                    settings):
    settings.BROWSER_ALLOWED_PRIVATE_HOSTS = []
    org, other = factories.organization(name="Builder Org"), factories.organization(name="Victim Org")
    urls = _urls(browser_env, stand_ins, internal)
    names = ["devtools", "sandboxd", "web", "redis", "internal"]
    outcome = asyncio.run(_beside_another_organization(
        browser_env, site, _agent(browser_env, ["127.0.0.1"]),
        [("browser_open", {"url": urls[name]}) for name in names], org, other))
    answers = dict(zip(names, outcome.returns, strict=True))
    for name, answer in answers.items():
        assert answer.startswith("Refused"), (name, answer)
        assert TOKEN not in answer and "webSocketDebuggerUrl" not in answer and "internal secret" not in answer
    assert "the browser's DevTools" in answers["devtools"]
    assert "BROWSER_ALLOWED_PRIVATE_HOSTS" in answers["internal"]
    assert internal.hits == [] and all(server.hits == [] for server in stand_ins.values())
    assert site.paths() == ["/form"]  # the other organization's own page, and nothing the agent asked for


def test_the_operators_list_opens_an_internal_page_and_never_the_deployments_services(browser_env, site, internal,
                                                                                    stand_ins, settings):
    org, other = factories.organization(name="Builder Org"), factories.organization(name="Victim Org")
    settings.BROWSER_ALLOWED_PRIVATE_HOSTS = ["127.0.0.1"]
    urls = _urls(browser_env, stand_ins, internal)
    postgres_port = int(settings.DATABASES["default"].get("PORT") or 5432)
    urls |= {"postgres": f"http://127.0.0.1:{postgres_port}/",
             "devtools by name": f"http://localhost:{browser_env.port}/json/list",
             "devtools by redirect": f"http://{SITE}:{site.port}/redirect?to={urls['devtools']}"}
    names = ["internal", "devtools", "devtools by name", "devtools by redirect", "sandboxd", "web", "postgres",
             "redis"]
    outcome = asyncio.run(_beside_another_organization(
        browser_env, site, _agent(browser_env, ["127.0.0.1", "localhost", SITE]),
        [("browser_open", {"url": urls[name]}) for name in names], org, other))
    answers = dict(zip(names, outcome.returns, strict=True))
    assert "internal secret 7731" in answers.pop("internal")  # the control: the operator's list opened it
    assert internal.paths() == ["/secret"]
    said = {"devtools": "the browser's DevTools", "devtools by name": "the browser's DevTools",
            "devtools by redirect": "the browser's DevTools", "sandboxd": "sandboxd",
            "web": "this deployment's web server", "postgres": "PostgreSQL", "redis": "Redis"}
    for name, answer in answers.items():
        assert answer.startswith("Refused") and said[name] in answer, (name, answer)
        assert "whatever allowed_domains or BROWSER_ALLOWED_PRIVATE_HOSTS lists" in answer
        assert TOKEN not in answer and "webSocketDebuggerUrl" not in answer
    assert all(server.hits == [] for server in stand_ins.values())


def test_a_pages_own_fetch_and_socket_never_reach_the_devtools_port_the_operator_listed(browser_env, site,
                                                                                       settings):
    settings.BROWSER_ALLOWED_PRIVATE_HOSTS = ["127.0.0.1"]
    devtools = f"127.0.0.1:{browser_env.port}"

    async def browse() -> tuple[list[str], set[str], list[str]]:
        tab = BrowserSession(config=BrowserConfig(cdp_url=browser_env.cdp_url,
                                                  allowed_domains=[SITE, "127.0.0.1"]))
        titles = []
        try:
            for page in (f"fetcher?to=http://{devtools}/json/list", f"socket?to=ws://{devtools}/devtools/browser"):
                await tab.open(f"http://{SITE}:{site.port}/{page}")
                await tab.page.wait_for_function(
                    "['refused', 'closed', 'open'].includes(document.title) || document.title.startsWith('got')",
                    timeout=10000)
                titles.append(await tab.page.title())
            return titles, set(tab.policy.refused), tab.policy.reasons
        finally:
            await tab.close()

    titles, refused, reasons = asyncio.run(browse())
    assert titles == ["refused", "closed"]
    assert refused == {f"http://{devtools}/json/list", f"ws://{devtools}/devtools/browser"}
    assert all("the browser's DevTools" in reason for reason in reasons)


def test_two_organizations_browse_in_contexts_of_their_own(browser_env, site):
    """Each browse is a browser context of its own (never the default one): a cookie one organization's page got
    is not the other's, and the two tabs sit in two contexts Chromium lists as created ones."""

    async def both() -> tuple[str, str, str, str, list[str]]:
        ours = BrowserSession(config=BrowserConfig(cdp_url=browser_env.cdp_url, allowed_domains=[SITE]))
        theirs = BrowserSession(config=BrowserConfig(cdp_url=browser_env.cdp_url, allowed_domains=[SITE]))
        try:
            await ours.open(f"http://{SITE}:{site.port}/cookie/set")
            await theirs.open(f"http://{SITE}:{site.port}/cookie/show")
            seen = (await theirs.read()).text
            await ours.open(f"http://{SITE}:{site.port}/cookie/show")
            kept = (await ours.read()).text
            ids = [await _context_of(tab) for tab in (ours, theirs)]
            session = await ours._browser.new_browser_cdp_session()
            created = (await session.send("Target.getBrowserContexts"))["browserContextIds"]
            await session.detach()
            return seen, kept, ids[0], ids[1], created
        finally:
            await ours.close()
            await theirs.close()

    seen, kept, our_context, their_context, created = asyncio.run(both())
    assert "Cookie: no cookie" in seen
    assert "Cookie: session=alice" in kept  # the control: the cookie was set, in its own context
    assert our_context != their_context and {our_context, their_context} <= set(created)


async def _context_of(tab: BrowserSession) -> str:
    session = await tab.context.new_cdp_session(tab.page)
    try:
        info: dict[str, Any] = (await session.send("Target.getTargetInfo"))["targetInfo"]
    finally:
        await session.detach()
    return str(info["browserContextId"])


# ------------------------------------------------------------------ at publish


def _browser_agent(org, user, allowed: list[str]):
    # A real chat model: publish refuses browse_web on the demo model (it cannot choose a step).
    model = factories.model_profile(org, "openai", "gpt-4o", api_key="sk-test-000000000000")
    data = {"name": "Browser", "model_profile_id": str(model.pk),
            "capabilities": [{"id": "browser_use", "config": {"cdp_url": "http://127.0.0.1:9222",
                                                              "allowed_domains": allowed}}]}
    return services.create_agent(actor=actor_of(user, org), name="Browser", spec=data)


def test_publishing_refuses_an_internal_allowed_domain_the_operator_did_not_list(org, builder, outsider, api_as,
                                                                               settings, monkeypatch):
    from agenticos import netguard

    settings.BROWSER_CDP_ALLOWED_HOSTS = ["127.0.0.1"]

    real = netguard.resolve

    async def resolve(hostname: str) -> list[str]:
        return {SITE: ["93.184.216.34"], INTRANET: ["10.20.30.40"]}.get(hostname) or await real(hostname)

    monkeypatch.setattr(netguard, "resolve", resolve)
    agent = _browser_agent(org, builder, ["127.0.0.1", INTRANET, SITE, f"*.{INTRANET}"])
    assert api_as(outsider, None).post(f"/api/v1/agents/{agent.pk}/publish", {}, format="json").status_code == 404

    response = api_as(builder, org).post(f"/api/v1/agents/{agent.pk}/publish", {}, format="json")
    assert response.status_code == 422
    problems = {p["field"]: p["message"] for p in response.json()["error"]["details"]["problems"]
                if "allowed_domains" in p["field"]}
    assert len(problems) == 3, problems
    messages = sorted(problems.values())
    assert [m.split(":")[0] for m in messages] == [f"*.{INTRANET}", "127.0.0.1", INTRANET]
    assert all("Only hosts the operator lists in BROWSER_ALLOWED_PRIVATE_HOSTS" in m for m in messages)
    assert not AgentVersion.objects.filter(agent=agent).exists()

    settings.BROWSER_ALLOWED_PRIVATE_HOSTS = ["127.0.0.1", INTRANET]
    response = api_as(builder, org).post(f"/api/v1/agents/{agent.pk}/publish", {}, format="json")
    assert response.status_code == 201, response.json()
    assert AgentVersion.objects.filter(agent=agent).count() == 1

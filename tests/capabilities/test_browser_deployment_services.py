"""The browser's hard deny list by address and port, without a browser: every spelling of a service on this
machine, a browser service on a machine of its own (docker-compose's `browser`), and what stays open.

`RequestPolicy.refusal` is the one check every request of a page passes (session.py), so asking it is asking the
browser; the live tests (test_browser_internal_hosts.py) show the same refusals in Chromium.
"""

from __future__ import annotations

import asyncio
from urllib.parse import urlsplit

import pytest

from agenticos import netguard
from capabilities.browser.policy import RequestPolicy

# The deployment below names PostgreSQL on a host of its own; this module opens no database connection.
pytestmark = pytest.mark.filterwarnings("ignore:Overriding setting DATABASES")

NAMES = {"browser": ["172.18.0.5"], "postgres": ["172.19.0.2"], "intranet.corp": ["10.1.2.3"],
         "wiki.corp": ["10.1.2.4"], "agents.example.com": ["93.184.216.34"]}


@pytest.fixture
def deployment(settings, monkeypatch):
    """PostgreSQL on its own host, Redis on this machine, the operator lists every private address."""
    settings.DATABASES = {**settings.DATABASES,
                          "default": {**settings.DATABASES["default"], "HOST": "postgres", "PORT": "5432"}}
    settings.REDIS_URL = "redis://127.0.0.1:6390/0"
    settings.BROKER_REDIS_URL = "redis://127.0.0.1:6390/33"
    settings.SANDBOXD_URL = "http://127.0.0.1:8765"
    settings.PORT = 8000
    settings.FRONTEND_URL = "https://agents.example.com"
    settings.BROWSER_ALLOWED_PRIVATE_HOSTS = ["0.0.0.0/0", "::/0"]
    monkeypatch.delenv("BROWSER_CDP_PORT", raising=False)
    real = netguard.resolve

    async def resolve(hostname: str) -> list[str]:
        return NAMES.get(hostname) or await real(hostname)

    monkeypatch.setattr(netguard, "resolve", resolve)


def refusal(url: str, *, cdp_url: str = "http://127.0.0.1:9222") -> str | None:
    """The policy's answer for an agent whose allowed_domains names the URL's host."""
    return asyncio.run(RequestPolicy(allowed_domains=[urlsplit(url).hostname or ""],
                                     browser_endpoint=cdp_url).refusal(url))


@pytest.mark.parametrize(("url", "service"), [
    ("http://127.0.0.1:9222/json/list", "the browser's DevTools"),
    ("http://localhost:9222/json/list", "the browser's DevTools"),
    ("http://127.0.0.2:9222/json/list", "the browser's DevTools"),
    ("http://0.0.0.0:9222/json/list", "the browser's DevTools"),
    ("http://[::1]:9222/json/list", "the browser's DevTools"),
    ("http://[::ffff:127.0.0.1]:9222/json/list", "the browser's DevTools"),
    ("ws://127.0.0.1:9222/devtools/browser/x", "the browser's DevTools"),
    ("http://127.0.0.1:8765/healthz", "sandboxd"),
    ("http://127.0.0.1:8000/healthz", "web server"),
    ("http://172.19.0.2:5432/", "PostgreSQL"),
    ("http://postgres:5432/", "PostgreSQL"),
    ("http://127.0.0.1:6390/", "Redis"),
    ("http://[::1]:6390/", "Redis"),
])
def test_the_deployments_own_services_are_refused_in_every_spelling(deployment, url, service):
    reason = refusal(url)
    assert reason is not None and service in reason, reason
    assert "whatever allowed_domains or BROWSER_ALLOWED_PRIVATE_HOSTS lists" in reason


@pytest.mark.parametrize("url", [
    "http://127.0.0.1:8080/",  # another port on this machine, which the operator listed
    "http://intranet.corp:5433/",  # an internal host the operator listed
    "http://172.19.0.2:8080/",  # PostgreSQL's host on another port
    "https://agents.example.com/",  # the site's own public address is a public site like any other
])
def test_what_the_operator_listed_stays_open_beside_them(deployment, url):
    assert refusal(url) is None


def test_a_browser_on_a_machine_of_its_own_has_no_loopback_and_its_host_is_closed(deployment):
    """docker-compose's browser: DevTools on its loopback (9223, relayed to 9222 on its network address)."""
    cdp_url = "http://browser:9222"
    for url in ("http://127.0.0.1:9223/json/list", "http://localhost:1/", "http://172.18.0.5:9223/json/list",
                "http://172.18.0.5:9222/json/list"):
        reason = refusal(url, cdp_url=cdp_url)
        assert reason is not None and "never reaches it" in reason, (url, reason)
    assert refusal("http://wiki.corp/", cdp_url=cdp_url) is None  # the control: the operator's list still holds


def test_without_the_operators_list_an_internal_host_is_refused_whatever_the_author_lists(deployment, settings):
    settings.BROWSER_ALLOWED_PRIVATE_HOSTS = []
    reason = refusal("http://intranet.corp/")
    assert reason is not None and "BROWSER_ALLOWED_PRIVATE_HOSTS" in reason
    settings.BROWSER_ALLOWED_PRIVATE_HOSTS = ["intranet.corp"]
    assert refusal("http://intranet.corp/") is None
    # The operator's list opens a host for the agents that name it, not for one that allows any public host.
    any_public = RequestPolicy(allowed_domains=None, browser_endpoint="http://127.0.0.1:9222")
    assert "BROWSER_ALLOWED_PRIVATE_HOSTS" in (asyncio.run(any_public.refusal("http://intranet.corp/")) or "")


@pytest.mark.parametrize("address", ["::ffff:0:10.1.2.3", "::ffff:10.1.2.3", "64:ff9b:1::a01:203", "2002:a01:203::1"])
def test_an_internal_address_spelled_in_ipv6_is_judged_by_its_ipv4(deployment, settings, monkeypatch, address):
    # A name answering an IPv6 form that carries 10.1.2.3 is that internal address (issue 37.8): refused without
    # the operator's list, as the IPv4 itself is.
    settings.BROWSER_ALLOWED_PRIVATE_HOSTS = []
    real = netguard.resolve

    async def resolve(hostname: str) -> list[str]:
        return [address] if hostname == "sneaky.example.com" else await real(hostname)

    monkeypatch.setattr(netguard, "resolve", resolve)
    reason = refusal("http://sneaky.example.com/")
    assert reason is not None and "inside this deployment's network" in reason, reason

"""web_search with method duckduckgo: the real `ddgs` engine (its HTTP client, form, HTML parsing and ad
filter) against a local server speaking DuckDuckGo's HTML protocol. Only the engine's endpoint URL is
pointed at the fake; the tests have no internet."""

from __future__ import annotations

import pytest
from ddgs.engines.duckduckgo import Duckduckgo

from tests.capabilities.helpers import spec
from tests.tools.ddg_fake import FakeDuckDuckGo
from tests.tools.helpers import run_sync

ORG = "00000000-0000-0000-0000-000000000001"
pytestmark = pytest.mark.usefixtures("tool_capabilities")


@pytest.fixture
def ddg(monkeypatch):
    server = FakeDuckDuckGo().start()
    monkeypatch.setattr(Duckduckgo, "search_url", server.url)
    yield server
    server.stop()


def _search(query: str, max_results: int = 3):
    binding = {"id": "web_research", "config": {"method": "duckduckgo", "max_results": max_results}}
    return run_sync(spec(binding), [("web_search", {"query": query})], org_id=ORG)


def test_duckduckgo_results_come_back_as_title_url_snippet_without_ads(ddg):
    outcome = _search("django signals")
    (results,) = outcome.returns
    assert len(results) == 3
    assert all(set(r) == {"title", "url", "snippet"} for r in results)
    assert {r["url"] for r in results} <= {f"https://docs.example.org/django-signals/{i}" for i in range(1, 6)}
    assert not any("duckduckgo.com/y.js" in r["url"] for r in results)
    first = next(r for r in results if r["url"].endswith("/1"))
    assert first["title"] == "django signals — page 1" and first["snippet"] == "About django signals, part 1."
    assert [form["q"] for form in ddg.forms] == [["django signals"]]


def test_max_results_bounds_what_the_agent_sees(ddg):
    (results,) = _search("pgvector", max_results=1).returns
    assert len(results) == 1


def test_a_rate_limited_duckduckgo_is_a_retry_never_an_empty_result(ddg):
    ddg.mode = "ratelimit"
    outcome = _search("anything")
    assert outcome.retries and "looks temporary" in outcome.retries[0]
    assert outcome.returns == []
    assert ddg.forms  # the request really reached the (fake) service

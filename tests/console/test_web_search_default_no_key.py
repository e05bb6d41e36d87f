"""Web search's default needs no key, and the Builder says so: its card names the services that need one
(Tavily, Brave Search, Exa) and that DuckDuckGo, the default, needs none; switched on with its default and no key
it saves without a problem, publishes, and an agent's run searches (the real `ddgs` engine against a local
server speaking DuckDuckGo's HTML protocol, the model a local OpenAI-compatible fake). A paid service without a
key is still refused at publish, at the key's field."""

from __future__ import annotations

import json

import pytest
from ddgs.engines.duckduckgo import Duckduckgo

from agents.models import Agent, Run, ToolCall
from agents.runner import execute
from agents.runner.frames import CollectingSink
from tests import factories
from tests.fakes.openai_server import FakeOpenAIServer, Reply
from tests.tools.ddg_fake import FakeDuckDuckGo

pytestmark = pytest.mark.django_db(transaction=True)

JSON = {"HTTP_ACCEPT": "application/json"}


@pytest.fixture
def outside(settings, monkeypatch):
    settings.MODEL_ALLOWED_PRIVATE_HOSTS = ["127.0.0.1"]
    ddg = FakeDuckDuckGo().start()
    monkeypatch.setattr(Duckduckgo, "search_url", ddg.url)  # only the engine's endpoint is pointed at the fake
    with FakeOpenAIServer() as model:
        yield model, ddg
    ddg.stop()


def card(html: str, cap_id: str) -> str:
    start = html.index(f'id="cap-{cap_id}"')
    return html[start:html.index("</article>", start)]


def test_web_search_with_its_default_needs_no_key_saves_publishes_and_searches(client_as, api_as, outside):
    model, ddg = outside
    org = factories.organization(name="Acme")
    builder = factories.member(org, "builder")
    local = factories.model_profile(org, "openai_compatible", "qwen-local", label="Local", base_url=model.base_url)
    client = client_as(builder, org)
    client.post("/agents/new", {"name": "Researcher", "template": "blank"})  # a new agent, on the local model
    agent = Agent.objects.get(organization=org, name="Researcher")
    assert agent.draft_spec["model_profile_id"] == str(local.pk)

    html = card(client.get(f"/agents/{agent.pk}/").content.decode(), "web_research")
    assert "only with Tavily, Brave Search or Exa; DuckDuckGo, the default, needs no key" in html
    assert '<option value="duckduckgo" selected' in html or 'value="duckduckgo" selected' in html

    saved = client.post(f"/agents/{agent.pk}/toolbox/web_research",
                        {"enabled": "on", "config.method": "duckduckgo", "config.max_results": "3", "secret_id": "",
                         "approval": "default"}, **JSON)
    assert saved.status_code == 200 and saved.json() == {"saved": True, "problems": {}, "also_bound": []}
    binding = next(b for b in Agent.objects.get(pk=agent.pk).draft_spec["capabilities"] if b["id"] == "web_research")
    assert binding["config"]["method"] == "duckduckgo" and binding.get("secret_id") is None
    published = client.post(f"/agents/{agent.pk}/publish", {"note": "web search"})
    assert published.status_code == 302
    assert Agent.objects.get(pk=agent.pk).versions.filter(number=1).exists()

    model.queue(Reply.tool_call("web_search", {"query": "django signals"}),
                Reply.text("Django signals are documented at docs.example.org."), route="chat")
    started = api_as(builder, org).post(f"/api/v1/agents/{agent.pk}/run?wait=false",
                                        {"prompt": "What are Django signals?"}, format="json")
    assert started.status_code == 202, started.json()
    run = Run.objects.get(pk=started.json()["run_id"])
    execute(run.pk, CollectingSink())
    run.refresh_from_db()
    assert run.status == "completed", run.error
    call = ToolCall.objects.get(run=run, tool_name="web_search")
    assert call.status == "ok", call.result
    assert [form["q"] for form in ddg.forms] == [["django signals"]]
    tool_message = next(m for m in model.requests_to("chat")[-1].json["messages"] if m.get("role") == "tool")
    results = json.loads(tool_message["content"])
    assert len(results) == 3 and results[0]["url"].startswith("https://docs.example.org/django-signals/")


def test_a_paid_search_service_without_a_key_is_refused_at_the_key(client_as, org, builder):
    agent = factories.published_agent(org, builder, name="Researcher")
    client = client_as(builder, org)
    saved = client.post(f"/agents/{agent.pk}/toolbox/web_research",
                        {"enabled": "on", "config.method": "tavily", "config.max_results": "5", "secret_id": ""},
                        **JSON)
    assert saved.json()["saved"] is True and "secret_id" in saved.json()["problems"]
    html = card(client.get(f"/agents/{agent.pk}/").content.decode(), "web_research")
    assert html.count("data-field-error") == 1  # said once, at the key
    assert client.post(f"/agents/{agent.pk}/publish", {"note": "x"}).status_code == 422

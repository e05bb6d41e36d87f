"""One AgenticOS agent delegating to another AgenticOS agent over A2A on the same deployment.

The remote side is this project's own A2A server (interop/a2a.py) served by a real daphne (tests/fakes/live_daphne.py)
with the in-process Celery worker running its runs; the registration's key is a platform API key kept in the
vault. The lead's model is reached through the real OpenAI client against tests/fakes/openai_server.py; the remote
agent runs on the offline demo model.
"""

from __future__ import annotations

import json

import pytest

from agenticos.services import create_api_key
from agents.models import Run, RunStatus
from capabilities.remote_agents import services as remote_services
from governance.models import SpendEntry
from tests import factories
from tests.fakes.openai_server import Reply
from tests.interop.conftest import live_server_url  # noqa: F401  (fixture: the project's ASGI app under daphne)
from tests.runner.conftest import actor_of
from tests.runner.test_execute import run_now

pytestmark = pytest.mark.django_db(transaction=True)

MODEL_KEY = "sk-live-lead-model-key-5522"


def test_a_lead_delegates_to_another_agenticos_agent_over_a2a(live_server_url, org, owner, outsider,  # noqa: F811
                                                               outsider_org, fake_openai, celery_worker, settings,
                                                               api_as):
    settings.TOOL_ALLOWED_PRIVATE_HOSTS = ["127.0.0.1"]
    settings.REMOTE_AGENT_PLAIN_HTTP_HOSTS = ["127.0.0.1"]  # the deployment's own endpoint, no TLS hop here
    helper = factories.published_agent(org, owner, name="Shop Helper", description="Answers about the shop.")
    _, platform_key = create_api_key(actor=actor_of(owner, org), name="a2a delegation")
    secret = factories.secret(org, name="own a2a key", value=platform_key)
    card_url = f"{live_server_url}/a2a/{helper.slug}/.well-known/agent-card.json"

    # An outsider's key reaches no agent of ours: their registration is refused when the card is read.
    _, their_key = create_api_key(actor=actor_of(outsider, outsider_org), name="theirs")
    their_secret = factories.secret(outsider_org, value=their_key)
    refused = api_as(outsider, outsider_org).post("/api/v1/remote-agents", {
        "card_url": card_url, "secret_id": str(their_secret.pk)}, format="json")
    assert refused.status_code == 422 and "404" in refused.json()["error"]["message"]

    row = remote_services.create_remote_agent(actor=actor_of(owner, org), card_url=card_url,
                                              secret_id=str(secret.pk))
    assert row.name == "Shop Helper" and row.endpoint_url == f"{live_server_url}/a2a/{helper.slug}"

    from agents import services

    profile = factories.model_profile(org, "openai_compatible", "gpt-4o-mini", api_key=MODEL_KEY,
                                      base_url=fake_openai.base_url)
    spec = {"name": "Lead", "instructions": "You are the lead.", "model_profile_id": str(profile.pk),
            "capabilities": [{"id": "subagents"}],
            "external_agents": [{"name": "shop-helper", "remote_agent_id": str(row.pk)}]}
    lead = services.create_agent(actor=actor_of(owner, org), name="Lead", spec=spec)
    version = services.publish_agent(actor=actor_of(owner, org), agent=lead)
    fake_openai.queue(
        Reply.tool_call("task", {"description": "What time does the shop open?", "subagent_type": "shop-helper"}),
        Reply.text("The shop helper answered."),
    )
    from agents.runs import start_run

    run = start_run(agent=lead, version=version, surface="api", prompt="When does the shop open?", user=owner,
                    acting_role="owner", enqueue=False)
    run_now(run)

    run.refresh_from_db()
    assert run.status == RunStatus.COMPLETED, run.error
    # The remote side was one run of the helper, on the API surface, admitted by the key from the vault.
    remote_run = Run.objects.exclude(pk=run.pk).get()
    assert remote_run.agent_id == helper.pk and remote_run.surface == "api"
    assert remote_run.status == RunStatus.COMPLETED and remote_run.prompt == "What time does the shop open?"
    [tool_result] = [m["content"] for m in fake_openai.chat_requests[1].json["messages"] if m["role"] == "tool"]
    assert remote_run.output and remote_run.output in tool_result  # the lead read the helper's answer
    # Each side has its own ledger: the lead's holds the A2A call at zero and partial.
    kinds = list(SpendEntry.objects.filter(run=run).order_by("id").values_list("kind", "is_partial"))
    assert kinds[1] == ("remote_agent", True)
    assert platform_key not in json.dumps([r.text for r in fake_openai.chat_requests])

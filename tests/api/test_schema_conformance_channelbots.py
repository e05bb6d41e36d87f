"""Every channelbots operation, called on real objects (bots of each platform and transport, a binding, a chat account,
a link), answers inside the documented schema: the fuzz test sees only an empty organization."""

from __future__ import annotations

import pytest
import schemathesis
from django.db import transaction
from schemathesis.specs.openapi.checks import response_schema_conformance, status_code_conformance

from channelbots import services as bots
from tests.api.conftest import actor_of
from tests.api.test_fuzz import owner_key, wsgi_app  # noqa: F401  (fixtures)

pytestmark = pytest.mark.django_db


def test_every_channelbots_operation_on_real_objects_answers_inside_its_schema(wsgi_app, owner_key, org, owner, published_agent):  # noqa: F811
    actor = actor_of(owner, org)
    slack = bots.create_bot(actor=actor, data={"platform": "slack", "name": "S", "token": "xoxb-000000000000"})
    tg = bots.create_bot(actor=actor, data={"platform": "telegram", "name": "T", "token": "123456:ABCDEFGH",
                                            "transport": "polling"})
    mm = bots.create_bot(actor=actor, data={"platform": "mattermost", "name": "M", "token": "mm-token-0000",
                                            "api_base_url": "https://mattermost.example.com",
                                            "access_policy": {"mode": "whitelist", "whitelist": ["u1"]}})
    binding = bots.create_binding(actor=actor, agent=published_agent, data={
        "bot_id": str(slack.pk), "workspace_scope": "channel", "channel_tools": ["get_channel_info"]})
    ident = bots.identity_for(tg, workspace="", account_id="42", display_name="Ann")
    token = bots.mint_link(ident, tg).rsplit("/", 1)[1]
    schema = schemathesis.openapi.from_wsgi("/api/schema/", wsgi_app)
    headers = {"Authorization": f"Bearer {owner_key}"}
    agent = str(published_agent.pk)
    calls = [
        ("/api/v1/bots", "GET", {}, None),
        ("/api/v1/bots", "POST", {}, {"platform": "telegram", "name": "New", "token": "999999:ABCDEFGHIJ"}),
        ("/api/v1/bots", "POST", {}, {"platform": "slack", "name": "x"}),
        *[("/api/v1/bots/{bot_id}", "GET", {"bot_id": str(b.pk)}, None) for b in (slack, tg, mm)],
        ("/api/v1/bots/{bot_id}", "PATCH", {"bot_id": str(mm.pk)}, {"name": "M2", "stt_provider": ""}),
        ("/api/v1/bots/{bot_id}", "PATCH", {"bot_id": str(mm.pk)}, {"platform": "slack"}),
        ("/api/v1/bots/{bot_id}/pause", "POST", {"bot_id": str(tg.pk)}, None),
        ("/api/v1/bots/{bot_id}/resume", "POST", {"bot_id": str(tg.pk)}, None),
        ("/api/v1/agents/{agent_id}/bindings", "GET", {"agent_id": agent}, None),
        ("/api/v1/agents/{agent_id}/bindings", "POST", {"agent_id": agent}, {"bot_id": str(tg.pk)}),
        ("/api/v1/agents/{agent_id}/bindings", "POST", {"agent_id": agent}, {"bot_id": str(slack.pk)}),
        ("/api/v1/agents/{agent_id}/bindings/{binding_id}", "GET", {"agent_id": agent, "binding_id": str(binding.pk)}, None),
        ("/api/v1/agents/{agent_id}/bindings/{binding_id}", "PATCH", {"agent_id": agent, "binding_id": str(binding.pk)},
         {"footer_mode": "every_n", "footer_every_n": 3, "workspace_scope": ""}),
        ("/api/v1/agents/{agent_id}/bindings/{binding_id}", "DELETE", {"agent_id": agent, "binding_id": str(binding.pk)}, None),
        ("/api/v1/chat-links/{token}", "GET", {"token": token}, None),
        ("/api/v1/chat-links/{token}", "POST", {"token": token}, None),
        ("/api/v1/chat-links/{token}", "GET", {"token": token}, None),
        ("/api/v1/chat-accounts", "GET", {}, None),
        ("/api/v1/chat-accounts/{identity_id}", "DELETE", {"identity_id": str(ident.pk)}, None),
        ("/api/v1/bots/{bot_id}", "DELETE", {"bot_id": str(mm.pk)}, None),
    ]
    seen = []
    for path, method, params, body in calls:
        operation = schema[path][method]
        kwargs = {"path_parameters": params}
        if body is not None:
            kwargs["body"] = body
            kwargs["media_type"] = "application/json"
        case = operation.Case(**kwargs)
        with transaction.atomic():
            response = case.call(headers=headers)
        seen.append((method, path, response.status_code, response.text[:300]))
        case.validate_response(response, checks=[response_schema_conformance, status_code_conformance])
    for row in seen:
        print(row)
    accounts = [row for row in seen if row[1] == "/api/v1/chat-accounts"]
    assert '"linked_at"' in accounts[0][3]

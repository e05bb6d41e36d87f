"""REST for bots, bindings and chat accounts: credentials sealed and never returned, tenant isolation,
roles, one agent per bot."""

from __future__ import annotations

import pytest

from agenticos import vault
from agenticos.models import AuditEvent
from channelbots.models import Binding, BotCredential, ChannelBot
from tests import factories
from tests.channelbots.conftest import SIGNING_SECRET, SLACK_TOKEN, bind, slack_bot

pytestmark = pytest.mark.django_db


def test_registering_a_slack_bot_seals_its_credentials_and_never_returns_them(api_as, org, builder):
    response = api_as(builder, org).post(
        "/api/v1/bots",
        {"platform": "slack", "name": "Support", "token": SLACK_TOKEN, "signing_secret": SIGNING_SECRET},
        format="json",
    )
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["token_set"] is True and body["signing_secret_set"] is True and body["app_token_set"] is False
    assert SLACK_TOKEN not in response.content.decode() and SIGNING_SECRET not in response.content.decode()
    assert body["webhook_url"].endswith(f"/api/v1/slack/{body['id']}/events")
    rows = {row.kind: row for row in BotCredential.objects.filter(bot_id=body["id"])}
    assert SLACK_TOKEN.encode() not in bytes(rows["token"].ciphertext)
    assert vault.reveal(rows["token"]) == SLACK_TOKEN
    assert AuditEvent.objects.filter(action="channelbot.create", target_id=body["id"]).exists()
    listed = api_as(builder, org).get("/api/v1/bots").json()["results"]
    assert [b["id"] for b in listed] == [body["id"]]
    assert SLACK_TOKEN not in str(listed)


def test_an_empty_credential_field_keeps_the_stored_one_and_a_typed_one_replaces_it(api_as, org, builder):
    bot = slack_bot(org, builder)
    client = api_as(builder, org)
    response = client.patch(f"/api/v1/bots/{bot.pk}", {"name": "Renamed", "token": "", "signing_secret": None},
                            format="json")
    assert response.status_code == 200
    creds = {row.kind: vault.reveal(row) for row in BotCredential.objects.filter(bot=bot)}
    assert creds == {"token": SLACK_TOKEN, "signing_secret": SIGNING_SECRET}
    client.patch(f"/api/v1/bots/{bot.pk}", {"app_token": "xapp-1-new-app-level-token"}, format="json")
    creds = {row.kind: vault.reveal(row) for row in BotCredential.objects.filter(bot=bot)}
    assert creds["app_token"] == "xapp-1-new-app-level-token" and creds["token"] == SLACK_TOKEN
    assert ChannelBot.objects.get(pk=bot.pk).name == "Renamed"


def test_a_mattermost_bot_without_a_server_address_is_refused(api_as, org, builder):
    response = api_as(builder, org).post(
        "/api/v1/bots", {"platform": "mattermost", "name": "Ops", "token": "mm-token-000000000"}, format="json"
    )
    assert response.status_code == 422
    assert response.json()["error"]["details"]["field"] == "api_base_url"


@pytest.mark.parametrize(
    ("url", "ok"),
    [
        ("http://mattermost:8065", True),
        ("https://10.0.0.5", False),  # private, and not in CHANNEL_ALLOWED_PRIVATE_HOSTS
        ("http://127.0.0.1:8065", True),  # listed by the tests' settings
        ("ftp://mattermost.example.com", False),
        ("https://user:pass@mattermost.example.com", False),
        ("http://169.254.169.254", False),
        ("http://metadata.google.internal", False),
        ("mattermost.example.com", False),
    ],
)
def test_a_server_address_allows_listed_private_hosts_but_refuses_metadata_and_credentials(api_as, org, builder, url, ok):
    response = api_as(builder, org).post(
        "/api/v1/bots",
        {"platform": "mattermost", "name": "Ops", "token": "mm-token-000000000", "api_base_url": url},
        format="json",
    )
    assert (response.status_code == 201) is ok, response.content


def test_a_telegram_bot_in_webhook_mode_gets_a_minted_secret(api_as, org, builder):
    response = api_as(builder, org).post(
        "/api/v1/bots", {"platform": "telegram", "name": "Tg", "token": "123456:ABCDEF-telegram"}, format="json"
    )
    assert response.status_code == 201
    assert response.json()["webhook_secret_set"] is True


def test_a_platform_credential_a_bot_cannot_carry_is_refused(api_as, org, builder):
    response = api_as(builder, org).post(
        "/api/v1/bots",
        {"platform": "telegram", "name": "Tg", "token": "123456:ABCDEF-telegram", "signing_secret": "abcdefghijk"},
        format="json",
    )
    assert response.status_code == 422


def test_pause_resume_and_delete_are_audited(api_as, org, builder):
    bot = slack_bot(org, builder)
    client = api_as(builder, org)
    assert client.post(f"/api/v1/bots/{bot.pk}/pause").json()["is_paused"] is True
    assert client.post(f"/api/v1/bots/{bot.pk}/resume").json()["is_paused"] is False
    assert client.delete(f"/api/v1/bots/{bot.pk}").status_code == 204
    assert not ChannelBot.objects.filter(pk=bot.pk).exists()
    actions = set(AuditEvent.objects.filter(target_id=str(bot.pk)).values_list("action", flat=True))
    assert {"channelbot.pause", "channelbot.resume", "channelbot.delete"} <= actions


def test_an_outsider_cannot_see_or_touch_a_bot(api_as, org, builder, outsider, outsider_org):
    bot = slack_bot(org, builder)
    client = api_as(outsider, outsider_org)
    assert client.get("/api/v1/bots").json()["results"] == []
    assert client.get(f"/api/v1/bots/{bot.pk}").status_code == 404
    assert client.patch(f"/api/v1/bots/{bot.pk}", {"name": "x"}, format="json").status_code == 404
    assert client.post(f"/api/v1/bots/{bot.pk}/pause").status_code == 404
    assert client.delete(f"/api/v1/bots/{bot.pk}").status_code == 404
    # Naming the other organization explicitly: not a member, so 404 as well.
    assert api_as(outsider, org).get("/api/v1/bots").status_code == 404


def test_a_member_cannot_manage_bots(api_as, org, builder, member):
    bot = slack_bot(org, builder)
    client = api_as(member, org)
    assert client.get("/api/v1/bots").status_code == 403
    assert client.post("/api/v1/bots", {"platform": "slack", "name": "x", "token": SLACK_TOKEN},
                       format="json").status_code == 403
    assert client.delete(f"/api/v1/bots/{bot.pk}").status_code == 403


def test_a_bot_serves_exactly_one_agent(api_as, org, builder, agent):
    other = factories.published_agent(org, builder, name="Other Agent")
    bot = slack_bot(org, builder)
    client = api_as(builder, org)
    first = client.post(f"/api/v1/agents/{agent.pk}/bindings", {"bot_id": str(bot.pk)}, format="json")
    assert first.status_code == 201, first.content
    second = client.post(f"/api/v1/agents/{other.pk}/bindings", {"bot_id": str(bot.pk)}, format="json")
    assert second.status_code == 409
    assert Binding.objects.filter(bot=bot).count() == 1
    listed = client.get(f"/api/v1/agents/{agent.pk}/bindings").json()["results"]
    assert listed[0]["bot_id"] == str(bot.pk) and listed[0]["footer_mode"] == "near_limit"


def test_an_agent_may_answer_on_several_bots_each_with_its_own_settings(api_as, org, builder, agent):
    slack = slack_bot(org, builder)
    tg = slack_bot(org, builder, name="Second")
    client = api_as(builder, org)
    a = client.post(f"/api/v1/agents/{agent.pk}/bindings",
                    {"bot_id": str(slack.pk), "extra_prompt": "Use Slack links.", "footer_mode": "every_reply"},
                    format="json")
    b = client.post(f"/api/v1/agents/{agent.pk}/bindings",
                    {"bot_id": str(tg.pk), "channel_tools": ["get_channel_info"]}, format="json")
    assert a.status_code == 201 and b.status_code == 201
    assert {r["footer_mode"] for r in client.get(f"/api/v1/agents/{agent.pk}/bindings").json()["results"]} == {
        "every_reply", "near_limit"}


def test_a_telegram_binding_cannot_grant_lookups_telegram_cannot_answer(api_as, org, builder, agent):
    response = api_as(builder, org).post(
        "/api/v1/bots", {"platform": "telegram", "name": "Tg", "token": "123456:ABCDEF-telegram"}, format="json")
    bot_id = response.json()["id"]
    refused = api_as(builder, org).post(f"/api/v1/agents/{agent.pk}/bindings",
                                        {"bot_id": bot_id, "channel_tools": ["read_channel_history"]}, format="json")
    assert refused.status_code == 422


def test_bindings_are_invisible_to_outsiders_and_closed_to_members(api_as, org, builder, member, agent, outsider,
                                                                    outsider_org):
    bot = slack_bot(org, builder)
    binding = bind(agent, bot, builder, org)
    out = api_as(outsider, outsider_org)
    assert out.get(f"/api/v1/agents/{agent.pk}/bindings").status_code == 404
    assert out.post(f"/api/v1/agents/{agent.pk}/bindings", {"bot_id": str(bot.pk)}, format="json").status_code == 404
    assert out.delete(f"/api/v1/agents/{agent.pk}/bindings/{binding.pk}").status_code == 404
    weak = api_as(member, org)
    assert weak.post(f"/api/v1/agents/{agent.pk}/bindings", {"bot_id": str(bot.pk)}, format="json").status_code == 403
    assert weak.delete(f"/api/v1/agents/{agent.pk}/bindings/{binding.pk}").status_code == 403


def test_a_bot_of_another_organization_cannot_be_bound(api_as, org, builder, agent, outsider, outsider_org):
    foreign = slack_bot(outsider_org, outsider)
    response = api_as(builder, org).post(f"/api/v1/agents/{agent.pk}/bindings", {"bot_id": str(foreign.pk)},
                                         format="json")
    assert response.status_code == 422

"""Promises no test held (issue 31): an outsider — a member of another organization, in their own organization
or naming ours in `X-Organization-Id` — cannot resume our bots, read or unlink our chat accounts, use our link
tokens, read our approvals, remove our organization's logo or touch our people's memory notes; creates naming
a foreign organization make nothing; a platform webhook signed with bot A's secret does not open bot B.

Every refusal also checks that nothing was written (`tests.api.state`). The role matrix
(`test_role_matrix.py`) holds GET/PATCH agents/{id}/bindings/{id} and DELETE agents/{id}/avatar for
outsiders and every role.
"""

from __future__ import annotations

import json
import time

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from agenticos.models import Organization
from agents.models import Environment
from agents.runs import start_run
from channelbots import services as bots
from channelbots.incoming import Incoming
from channelbots.models import ChannelBot, ChannelIdentity, CredentialKind, LinkRequest
from governance.models import Approval
from knowledge.models import MemoryNote
from tests.api.conftest import actor_of
from tests.api.state import TABLES, changed_tables, database_state

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 64
SIGNING_SECRET_A = "8f742231b10e8888abcd99yyyzzz85a5"
SIGNING_SECRET_B = "0c1d2e3f40516273849a5b6c7d8e9f00"
CREATE_TABLES = (*TABLES, "knowledge.Collection", "knowledge.ContextFile", "capabilities.ToolBuilderSession")


@pytest.fixture(autouse=True)
def _media(settings, tmp_path):
    settings.MEDIA_ROOT = str(tmp_path / "media")
    settings.FRONTEND_URL = "https://app.example.com"
    settings.CHANNEL_ALLOWED_PRIVATE_HOSTS = ["127.0.0.1"]  # the Mattermost bots' server address below


@pytest.fixture
def ours(org, owner, member, published_agent):
    """Our organization's objects an outsider will aim at."""
    actor = actor_of(owner, org)
    bot = bots.create_bot(actor=actor, data={"platform": "telegram", "name": "Support", "token": "123:tg-token-ours"})
    bots.set_paused(actor=actor, bot=bot, paused=True)
    linked = bots.identity_for(bot, workspace="", account_id="4242", display_name="Ana on Telegram")
    ChannelIdentity.objects.filter(pk=linked.pk).update(user=member)
    unlinked = bots.identity_for(bot, workspace="", account_id="5151", display_name="Bo on Telegram")
    link_url = bots.mint_link(unlinked, bot)
    version = Environment.objects.get(agent=published_agent, name="production").version
    run = start_run(agent=published_agent, version=version, surface="web", prompt="Send it", user=owner,
                    acting_role="owner", enqueue=False)
    approval = Approval.objects.create(organization=org, run=run, tool_call_id="c1", tool_id="t", tool_name="send_email",
                                       args={"to": "ceo@example.com"})
    from agenticos import services as kernel

    kernel.set_organization_logo(actor=actor, data=PNG)
    note = MemoryNote.objects.create(organization=org, agent=published_agent, owner_user=member, name="diet.md",
                                     content="Vegetarian.")
    return {"bot": bot.pk, "identity": linked.pk, "unlinked": unlinked.pk, "token": link_url.rsplit("/", 1)[1],
            "approval": approval.pk, "note": note.pk, "agent": published_agent.pk}


@pytest.fixture(params=["in their own organization", "naming ours"])
def outsider_client(request, api_as, outsider, outsider_org, org):
    return api_as(outsider, outsider_org if request.param == "in their own organization" else org)


def _refused(response, status: int, before: dict, tables=TABLES):
    assert response.status_code == status, response.content[:300]
    assert response.json()["error"]["code"] in {"not_found", "forbidden", "method_not_allowed"}
    assert changed_tables(before, database_state(tables)) == []


def test_an_outsider_cannot_resume_our_paused_bot(ours, outsider_client):
    before = database_state()
    _refused(outsider_client.post(reverse("channel-bot-resume", kwargs={"bot_id": ours["bot"]})), 404, before)
    assert ChannelBot.objects.get(pk=ours["bot"]).is_paused is True


def test_an_outsider_lists_none_of_our_chat_accounts_and_cannot_unlink_one(ours, api_as, outsider, outsider_org, org):
    own = api_as(outsider, outsider_org)
    listed = own.get(reverse("chat-accounts"))
    assert listed.status_code == 200 and listed.json()["results"] == []
    before = database_state()
    for client in (own, api_as(outsider, org)):
        _refused(client.delete(reverse("chat-account-detail", kwargs={"identity_id": ours["identity"]})), 404, before)
    assert ChannelIdentity.objects.get(pk=ours["identity"]).user_id is not None


def test_a_colleague_cannot_unlink_someone_elses_chat_account(ours, api_as, builder, org):
    before = database_state()
    client = api_as(builder, org)
    assert client.get(reverse("chat-accounts")).json()["results"] == []
    _refused(client.delete(reverse("chat-account-detail", kwargs={"identity_id": ours["identity"]})), 404, before)


def test_the_owner_of_a_chat_account_sees_and_unlinks_it(ours, api_as, member, org):
    """The positive side: the same calls work for the person the account is linked to."""
    client = api_as(member, org)
    assert [a["id"] for a in client.get(reverse("chat-accounts")).json()["results"]] == [ours["identity"]]
    assert client.delete(reverse("chat-account-detail", kwargs={"identity_id": ours["identity"]})).status_code == 204
    assert ChannelIdentity.objects.get(pk=ours["identity"]).user_id is None


def test_an_outsider_cannot_open_or_confirm_our_link_token(ours, api_as, outsider, outsider_org, org):
    url = reverse("chat-link", kwargs={"token": ours["token"]})
    own, naming_ours = api_as(outsider, outsider_org), api_as(outsider, org)
    before = database_state()
    _refused(own.get(url), 404, before)
    _refused(naming_ours.get(url), 404, before)
    _refused(own.post(url), 403, before)  # "switch organization first" — and the link stays unused
    _refused(naming_ours.post(url), 404, before)
    assert LinkRequest.objects.get(identity_id=ours["unlinked"]).used_at is None
    assert ChannelIdentity.objects.get(pk=ours["unlinked"]).user_id is None


def test_a_member_of_the_organization_confirms_the_same_link(ours, api_as, builder, org):
    response = api_as(builder, org).post(reverse("chat-link", kwargs={"token": ours["token"]}))
    assert response.status_code == 200, response.content
    assert ChannelIdentity.objects.get(pk=ours["unlinked"]).user_id == builder.pk


def test_an_outsider_cannot_read_or_decide_our_approval(ours, outsider_client):
    url = reverse("approval-decide", kwargs={"approval_id": ours["approval"]})
    before = database_state()
    _refused(outsider_client.get(url), 404, before)
    assert "ceo@example.com" not in outsider_client.get(url).content.decode()
    _refused(outsider_client.post(url, {"decision": "approve"}, format="json"), 404, before)
    _refused(outsider_client.post(url, {"decision": "maybe"}, format="json"), 404, before)  # before the body
    assert Approval.objects.get(pk=ours["approval"]).status == "pending"


def test_removing_a_logo_as_an_outsider_never_removes_ours(ours, api_as, outsider, outsider_org, org):
    logo = Organization.objects.get(pk=org.pk).logo_path
    assert logo
    before = database_state()
    _refused(api_as(outsider, org).delete(reverse("api-organization-logo")), 404, before)
    # In their own organization the same call is theirs to make, and it removes only their own (absent) logo.
    assert api_as(outsider, outsider_org).delete(reverse("api-organization-logo")).status_code == 204
    assert Organization.objects.get(pk=org.pk).logo_path == logo


def test_an_outsider_cannot_delete_suspend_or_restore_our_members_memory_note(ours, api_as, outsider, outsider_org,
                                                                               org):
    own, naming_ours = api_as(outsider, outsider_org), api_as(outsider, org)
    note_url = reverse("api-memory-note", kwargs={"pk": ours["note"]})
    before = database_state()
    for client in (own, naming_ours):
        _refused(client.delete(note_url), 404, before)
        for action in ("suspend", "restore"):
            _refused(client.post(reverse("api-memory-note-action", kwargs={"pk": ours["note"], "action": action})),
                     404, before)
    action_url = reverse("api-memory-note-action", kwargs={"pk": ours["note"], "action": "suspend"})
    _refused(naming_ours.delete(action_url), 404, before)
    # No DELETE on an action route (it once answered 500): 405 decided by the method, before any note is read.
    _refused(own.delete(action_url), 405, before)
    note = MemoryNote.objects.get(pk=ours["note"])
    assert (note.status, note.content) == ("active", "Vegetarian.")


def test_a_colleague_cannot_touch_someone_elses_memory_note(ours, api_as, builder, org):
    client = api_as(builder, org)
    before = database_state()
    _refused(client.delete(reverse("api-memory-note", kwargs={"pk": ours["note"]})), 404, before)
    _refused(client.post(reverse("api-memory-note-action", kwargs={"pk": ours["note"], "action": "suspend"})), 404,
             before)


def test_the_person_the_note_is_about_suspends_it(ours, api_as, member, org):
    url = reverse("api-memory-note-action", kwargs={"pk": ours["note"], "action": "suspend"})
    assert api_as(member, org).post(url).status_code == 200
    assert MemoryNote.objects.get(pk=ours["note"]).status == "suspended"


# ------------------------------------------------------------------ creates naming a foreign organization

# (url name, kwargs from `ours`, body, multipart) — each body is valid: the outsider's own organization accepts it.
CREATES = [
    ("channel-bots", {}, {"platform": "slack", "name": "Mine", "token": "xoxb-outsider-1"}, False),
    ("api-collections", {}, {"name": "Policies"}, False),
    ("api-context-files", {}, {"name": "Tone", "body": "Be brief.", "mode": "link"}, False),
    ("api-tool-sessions", {}, {"title": "CRM"}, False),
    ("api-organization-logo", {}, None, True),
    ("api-agents", {}, {"name": "New agent"}, False),
    ("api-secrets", {}, {"name": "s", "value": "v-1234567890"}, False),
]


def _post(client, name, kwargs, body, multipart):
    url = reverse(name, kwargs=kwargs)
    if multipart:
        return client.post(url, {"file": SimpleUploadedFile("logo.png", PNG, content_type="image/png")},
                           format="multipart")
    return client.post(url, body, format="json")


@pytest.mark.parametrize(("name", "kwargs", "body", "multipart"), CREATES, ids=[c[0] for c in CREATES])
def test_a_create_naming_a_foreign_organization_makes_nothing(
    ours, api_as, outsider, outsider_org, org, name, kwargs, body, multipart
):
    before = database_state(CREATE_TABLES)
    response = _post(api_as(outsider, org), name, kwargs, body, multipart)
    assert response.status_code == 404, response.content[:300]
    assert response.json()["error"]["message"] == "Organization not found."
    assert changed_tables(before, database_state(CREATE_TABLES)) == []
    # The same request in the outsider's own organization is accepted and lands there: the body was valid.
    accepted = _post(api_as(outsider, outsider_org), name, kwargs, body, multipart)
    assert accepted.status_code in {200, 201}, accepted.content[:300]
    assert changed_tables(before, database_state(CREATE_TABLES))


@pytest.mark.parametrize("name", ["agent-embeds", "agent-bindings", "api-agent-grants", "agent-run"])
def test_a_create_under_one_of_our_agents_naming_our_organization_makes_nothing(ours, api_as, outsider, org, name):
    kwarg = "pk" if name == "api-agent-grants" else "agent_id"
    body = {"agent-embeds": {"kind": "page"}, "agent-bindings": {"bot_id": str(ours["bot"])},
            "api-agent-grants": {"user_id": outsider.pk, "level": "edit"}, "agent-run": {"prompt": "hi"}}[name]
    before = database_state()
    response = api_as(outsider, org).post(reverse(name, kwargs={kwarg: ours["agent"]}), body, format="json")
    _refused(response, 404, before)


# ------------------------------------------------------------------ platform webhooks: one bot's secret, another bot


@pytest.fixture
def dispatched(monkeypatch):
    """The Celery hand-off of an accepted platform message (the route's only side effect)."""
    seen: list[Incoming] = []
    monkeypatch.setattr("channelbots.tasks.handle_incoming.delay",
                        lambda data, claimed: seen.append(Incoming.from_json(data)))
    return seen


def _slack(client, bot_id, secret: str, body: bytes):
    from channelbots.slack.verify import sign

    ts = str(int(time.time()))
    return client.post(reverse("slack-events", kwargs={"bot_id": bot_id}), data=body, content_type="application/json",
                       HTTP_X_SLACK_REQUEST_TIMESTAMP=ts, HTTP_X_SLACK_SIGNATURE=sign(secret, body, ts))


def test_a_slack_event_signed_with_bot_as_secret_is_refused_by_bot_b(client, org, owner, outsider, outsider_org,
                                                                     dispatched):
    bot_a = bots.create_bot(actor=actor_of(owner, org), data={"platform": "slack", "name": "A", "token": "xoxb-a-1",
                                                              "signing_secret": SIGNING_SECRET_A})
    bot_b = bots.create_bot(actor=actor_of(outsider, outsider_org), data={
        "platform": "slack", "name": "B", "token": "xoxb-b-1", "signing_secret": SIGNING_SECRET_B})
    event = {"type": "event_callback", "team_id": "T1", "event_id": "Ev1",
             "event": {"type": "message", "user": "U1", "text": "hi", "channel": "D1", "channel_type": "im",
                       "ts": "1764000001.000100"},
             "authorizations": [{"user_id": "UBOT", "is_bot": True, "team_id": "T1"}]}
    body = json.dumps(event).encode()
    before = database_state()
    response = _slack(client, bot_b.pk, SIGNING_SECRET_A, body)
    assert response.status_code == 401 and response.json()["error"]["code"] == "bad_signature"
    assert dispatched == [] and changed_tables(before, database_state()) == []
    assert _slack(client, bot_a.pk, SIGNING_SECRET_A, body).status_code == 200  # the secret is A's, and works there
    assert [i.bot_id for i in dispatched] == [str(bot_a.pk)]


def test_a_telegram_update_with_bot_as_secret_token_is_refused_by_bot_b(client, org, owner, outsider, outsider_org,
                                                                        dispatched):
    def telegram(actor, name):
        return bots.create_bot(actor=actor, data={"platform": "telegram", "name": name, "token": f"123456:{name}-telegram-token-0001"})

    bot_a, bot_b = telegram(actor_of(owner, org), "A"), telegram(actor_of(outsider, outsider_org), "B")
    secret_a = bots.reveal_credentials(bot_a)[CredentialKind.WEBHOOK_SECRET]
    update = json.dumps({"update_id": 1, "message": {"message_id": 1, "date": 1764000000, "text": "hi",
                                                     "chat": {"id": 42, "type": "private"},
                                                     "from": {"id": 42, "is_bot": False, "first_name": "Ana"}}})

    def post(bot):
        return client.post(reverse("telegram-webhook", kwargs={"bot_id": bot.pk}), data=update,
                           content_type="application/json", HTTP_X_TELEGRAM_BOT_API_SECRET_TOKEN=secret_a)

    before = database_state()
    response = post(bot_b)
    assert response.status_code == 403 and response.json()["error"]["code"] == "bad_secret"
    assert dispatched == [] and changed_tables(before, database_state()) == []
    assert post(bot_a).status_code == 200
    assert [i.bot_id for i in dispatched] == [str(bot_a.pk)]


def test_a_mattermost_webhook_with_bot_as_token_is_refused_by_bot_b(client, org, owner, outsider, outsider_org,
                                                                    dispatched):
    def mattermost(actor, name, token):
        return bots.create_bot(actor=actor, data={"platform": "mattermost", "name": name, "token": f"mm-{name}-token-0123456789",
                                                  "api_base_url": "http://127.0.0.1:9065",
                                                  "webhook_secret": token})

    bot_a = mattermost(actor_of(owner, org), "A", "tok-from-mattermost-a")
    bot_b = mattermost(actor_of(outsider, outsider_org), "B", "tok-from-mattermost-b")
    body = {"token": "tok-from-mattermost-a", "channel_id": "town", "post_id": "p9", "user_id": "ada",
            "user_name": "ada", "text": "opsbot restart?", "trigger_word": "opsbot"}
    before = database_state()
    response = client.post(reverse("mattermost-webhook", kwargs={"bot_id": bot_b.pk}), body)
    assert response.status_code == 403 and response.json()["error"]["code"] == "bad_secret"
    assert dispatched == [] and changed_tables(before, database_state()) == []
    assert client.post(reverse("mattermost-webhook", kwargs={"bot_id": bot_a.pk}), body).status_code == 200
    assert [i.bot_id for i in dispatched] == [str(bot_a.pk)]

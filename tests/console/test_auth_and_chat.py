"""Sign in and out, password reset by email, invitations, and the chat's stored turns (grouping, order,
reconstruction, requests that return when a conversation is reopened)."""

from __future__ import annotations

import json
import re

import pytest
from django.core import mail

from agenticos import services as kernel
from agenticos.models import Membership
from agenticos.tenancy import actor_for_membership
from agents.models import Message, ToolCall
from governance.models import Question
from tests import factories
from tests.console.conftest import make_turn

pytestmark = pytest.mark.django_db
PASSWORD = "pw-correct-horse-9"


def test_sign_in_with_email_then_sign_out(client, org, owner):
    response = client.post("/login/", {"username": owner.email, "password": PASSWORD})
    assert response.status_code == 302 and response["Location"] == "/"
    assert client.get("/").status_code == 200
    assert client.post("/logout/").status_code == 302
    assert client.get("/").status_code == 302


def test_a_wrong_password_is_refused_with_a_message(client, org, owner):
    response = client.post("/login/", {"username": owner.email, "password": "nope"})
    assert response.status_code == 200 and b'role="alert"' in response.content


def test_password_reset_sends_a_link_that_sets_a_new_password(client, org, owner, settings):
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    assert client.post("/password-reset/", {"email": owner.email}).status_code == 302
    assert len(mail.outbox) == 1
    link = re.search(r"https?://[^/]+(/password-reset/\S+/)", mail.outbox[0].body).group(1)
    form = client.get(link, follow=True)
    assert form.status_code == 200 and b"new_password1" in form.content
    done = client.post(form.redirect_chain[-1][0], {"new_password1": "a-brand-new-pass-77",
                                                    "new_password2": "a-brand-new-pass-77"})
    assert done.status_code == 302
    owner.refresh_from_db()
    assert owner.check_password("a-brand-new-pass-77")


def test_an_invitation_link_joins_the_organization(client_as, org, owner, outsider_org):
    guest = factories.user(email="guest@example.com")
    inviter = actor_for_membership(Membership.objects.get(user=owner, organization=org))
    _invitation, token = kernel.invite_member(actor=inviter, email="guest@example.com", role="builder")
    client = client_as(guest)
    assert client.get(f"/invitations/{token}").status_code == 200
    assert client.post(f"/invitations/{token}").status_code == 302
    assert Membership.objects.get(user=guest, organization=org).role == "builder"
    assert client.post(f"/invitations/{token}").status_code == 404  # used once


def test_a_turn_keeps_its_parts_in_streamed_order_and_one_run_is_one_turn(client_as, org, owner, agent):
    conversation, run = make_turn(org, owner, agent, tools=("create_chart",))
    # A resumed run writes a continuation message for the same run, repeating the parked call.
    first_call = ToolCall.objects.get(run=run).tool_call_id
    Message.objects.create(conversation=conversation, run=run, role="assistant", author_label=agent.name,
                           content="After approval.", parts=[{"type": "tool", "tool_call_id": first_call},
                                                             {"type": "text", "text": "After approval."}])
    data = client_as(owner, org).get(f"/chat/{conversation.pk}/turns.json").json()
    assert [t["role"] for t in data["turns"]] == ["user", "assistant"]
    parts = data["turns"][1]["parts"]
    assert [p["type"] for p in parts] == ["text", "tool", "text", "text"]
    assert [p.get("text") for p in parts if p["type"] == "text"] == ["Let me look.", "Done.", "After approval."]
    assert parts[1]["call"]["name"] == "create_chart" and parts[1]["call"]["args"] == {"title": "Sales"}
    assert data["usage"]["input_tokens"] == 120 and data["usage"]["cost_usd"] == "0.00120000"


def test_a_message_without_a_run_is_never_grouped_and_old_turns_are_reconstructed(client_as, org, owner, agent):
    conversation, run = make_turn(org, owner, agent)
    Message.objects.filter(run=run, role="assistant").update(parts=[], thinking="Hmm.")
    Message.objects.create(conversation=conversation, run=None, role="assistant", content="Note one")
    Message.objects.create(conversation=conversation, run=None, role="assistant", content="Note two")
    turns = client_as(owner, org).get(f"/chat/{conversation.pk}/turns.json").json()["turns"]
    assert [t["role"] for t in turns] == ["user", "assistant", "assistant", "assistant"]
    assert [p["type"] for p in turns[1]["parts"]] == ["thinking", "tool", "text"]


def test_an_open_question_returns_when_the_conversation_is_reopened(client_as, org, owner, member, agent):
    conversation, run = make_turn(org, owner, agent, status="awaiting_answer")
    Question.objects.create(organization=org, run=run, asked_user=owner, tool_call_id="q1",
                            questions=[{"header": "Drink", "question": "Tea or coffee?",
                                        "options": [{"label": "Tea"}, {"label": "Coffee"}]}])
    page = client_as(owner, org).get(f"/chat/{conversation.pk}/").content.decode()
    state = json.loads(re.search(r'<script id="chat-state" type="application/json">(.*?)</script>', page, re.S)
                       .group(1))
    assert state["pending"]["questions"][0]["questions"][0]["question"] == "Tea or coffee?"
    assert state["conversation_id"] == str(conversation.pk)
    # Someone else's conversation is not theirs to open.
    assert client_as(member, org).get(f"/chat/{conversation.pk}/").status_code == 404


def test_the_usage_strip_data_puts_the_agents_cap_first_and_carries_the_organization_budget(
    client_as, org, owner
):
    agent = factories.published_agent(org, owner, name="Capped", budget={"monthly_usd": "3"})
    page = client_as(owner, org).get(f"/chat/?agent={agent.pk}").content.decode()
    state = json.loads(re.search(r'<script id="chat-state" type="application/json">(.*?)</script>', page, re.S)
                       .group(1))
    capped = next(a for a in state["agents"] if a["id"] == str(agent.pk))
    assert capped["budget"] == {"limit": "3", "spent": "0"}
    assert state["org_budget"]["limit"] is not None

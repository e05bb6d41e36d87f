"""The AI tool builder runs on the chat model the person chooses: a sensible default (the first connected chat
model that is not the scripted demo, never an embedding profile, whatever the labels' order), the choice kept
per session, a foreign or non-chat profile refused with nothing started. A builder agent left unpublished by an
earlier failure no longer breaks the builder, and its sessions stay out of the person's Chat list."""

from __future__ import annotations

import pytest

from agenticos.models import Membership
from agenticos.tenancy import actor_for_membership
from agents import services as agent_services
from agents import tool_builder
from agents.models import Agent, Conversation, Run
from capabilities.custom_tools import services
from capabilities.models import ToolBuilderSession
from tests import factories

pytestmark = pytest.mark.django_db

AI = "/tools/ai/"


@pytest.fixture
def profiles(org):
    """Alphabetically first an embedding profile, then the demo (made first), then a real chat model."""
    demo = factories.model_profile(org, label="B demo")
    embedding = factories.model_profile(org, "openai", "text-embedding-3-small", label="A embeddings",
                                        kind="embedding", api_key="sk-emb-0000")
    chat = factories.model_profile(org, "openai", "gpt-4o-mini", label="C chat", api_key="sk-chat-0000")
    return {"demo": demo, "embedding": embedding, "chat": chat}


@pytest.fixture
def session(org, builder):
    actor = actor_for_membership(Membership.objects.get(user=builder, organization=org))
    return services.create_session(actor=actor, title="CRM tools")


def spoken_model(session) -> str:
    run = Run.objects.filter(conversation_id=session.conversation_id).select_related("version").latest("created_at")
    return run.version.spec["model_profile_id"]


def test_the_default_is_the_first_real_chat_model_and_embedding_profiles_are_not_offered(
        client_as, org, builder, profiles, session):
    client = client_as(builder, org)
    html = client.get(f"{AI}{session.pk}/").content.decode()
    picker = html.split("data-builder-model>")[1].split("</select>")[0]
    assert "A embeddings" not in picker and "B demo" in picker and "cannot build tools" in picker
    assert f'value="{profiles["chat"].pk}" selected' in picker

    assert client.post(f"{AI}{session.pk}/say", {"prompt": "Stripe customers"}).status_code == 302
    session.refresh_from_db()
    assert spoken_model(session) == str(profiles["chat"].pk)


def test_the_person_chooses_the_model_and_the_session_keeps_it(client_as, org, builder, profiles, session):
    client = client_as(builder, org)
    client.post(f"{AI}{session.pk}/say", {"prompt": "Try", "model_profile_id": str(profiles["demo"].pk)})
    session.refresh_from_db()
    assert spoken_model(session) == str(profiles["demo"].pk)
    picker = client.get(f"{AI}{session.pk}/").content.decode().split("data-builder-model>")[1]
    assert f'value="{profiles["demo"].pk}" selected' in picker.split("</select>")[0]


def test_an_embedding_or_foreign_profile_is_refused_at_the_field_and_nothing_runs(
        client_as, org, builder, profiles, session, outsider_org):
    foreign = factories.model_profile(outsider_org, "openai", "gpt-4o", label="Theirs", api_key="sk-x-0000")
    client = client_as(builder, org)
    for bad in (profiles["embedding"].pk, foreign.pk, "not-a-uuid"):
        response = client.post(f"{AI}{session.pk}/say", {"prompt": "Build", "model_profile_id": str(bad)})
        html = response.content.decode()
        assert response.status_code == 422 and 'data-field-error="model_profile_id"' in html, bad
        assert "<code>model_profile_id</code>" not in html
    assert not Run.objects.filter(organization=org).exists()


def test_without_any_chat_model_the_builder_says_to_connect_one(client_as, org, builder, session):
    response = client_as(builder, org).post(f"{AI}{session.pk}/say", {"prompt": "Build"})
    assert response.status_code == 422 and "Connect a chat model" in response.content.decode()
    assert not Agent.objects.filter(organization=org, slug=tool_builder.BUILDER_SLUG).exists()


def test_a_builder_agent_left_unpublished_by_an_earlier_failure_does_not_break_later_sessions(
        client_as, org, builder, profiles, session):
    actor = actor_for_membership(Membership.objects.get(user=builder, organization=org))
    # What an earlier release left behind: the agent created on an embedding profile, its publish refused.
    agent_services.create_agent(actor=actor, name="Tool builder", slug=tool_builder.BUILDER_SLUG,
                                spec=tool_builder.builder_spec(str(profiles["embedding"].pk)), visibility="private")
    response = client_as(builder, org).post(f"{AI}{session.pk}/say", {"prompt": "Build"})
    assert response.status_code == 302
    session.refresh_from_db()
    assert spoken_model(session) == str(profiles["chat"].pk)


def test_builder_sessions_stay_out_of_the_chat_list(client_as, org, builder, profiles, session):
    client = client_as(builder, org)
    client.post(f"{AI}{session.pk}/say", {"prompt": "Build"})
    session.refresh_from_db()
    conversation = Conversation.objects.get(pk=session.conversation_id)
    assert conversation.external_key == tool_builder.CONVERSATION_KEY
    assert str(conversation.pk) not in client.get("/chat/").content.decode()
    assert client.get(f"/chat/{conversation.pk}/").status_code == 404


def test_an_older_sessions_conversation_leaves_the_chat_list_on_its_next_turn(client_as, org, builder, profiles,
                                                                               session):
    agent = factories.published_agent(org, builder, name="Old builder")
    old = Conversation.objects.create(organization=org, agent=agent, owner=builder, title="CRM tools")
    ToolBuilderSession.objects.filter(pk=session.pk).update(conversation=old)
    session.refresh_from_db()
    tool_builder.attach_conversation(actor=actor_for_membership(Membership.objects.get(user=builder,
                                                                                       organization=org)),
                                     session=session)
    old.refresh_from_db()
    assert old.external_key == tool_builder.CONVERSATION_KEY


def test_reloading_the_say_address_goes_back_to_the_session(client_as, org, builder, session):
    response = client_as(builder, org).get(f"{AI}{session.pk}/say")
    assert response.status_code == 302 and response["Location"] == f"{AI}{session.pk}/"


def test_a_viewer_and_an_outsider_start_nothing(client_as, org, viewer, outsider, outsider_org, profiles, session):
    assert client_as(viewer, org).post(f"{AI}{session.pk}/say", {"prompt": "x"}).status_code == 403
    assert client_as(outsider, outsider_org).post(f"{AI}{session.pk}/say", {"prompt": "x"}).status_code == 404
    assert client_as(outsider, outsider_org).get(f"{AI}{session.pk}/say").status_code == 302  # redirect, then 404
    assert not Run.objects.exists()


def test_the_api_refuses_a_non_chat_model_with_the_error_envelope(api_as, org, builder, profiles, session):
    response = api_as(builder, org).post(f"/api/v1/tool-kits/sessions/{session.pk}/messages/",
                                         {"prompt": "Build", "model_profile_id": str(profiles["embedding"].pk)},
                                         format="json")
    assert response.status_code == 422
    assert response.json()["error"]["details"]["problems"][0]["field"] == "model_profile_id"
    assert not Run.objects.exists()

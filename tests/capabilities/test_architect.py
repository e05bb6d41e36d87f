"""The Architect through the real runner and the OpenAI client against the local fake server: it reads what the
organization offers (list_setup_options), proposes a setup with propose_setup, which draws it as a card with the
names the person knows — or refuses, with a readable message the model reads, a setup naming another
organization's collection, secret or model, an unknown capability, or a budget above the organization's. A member
who may not create agents gets no card. Accepting (agents.architect.accept) creates a draft through the console's
checks and never publishes."""

from __future__ import annotations

import json
from decimal import Decimal

import pytest

from agenticos.errors import Conflict, Forbidden, Invalid, NotFound
from agenticos.models import AuditEvent, Membership
from agents import architect
from agents.models import Agent, AgentVersion, Conversation, Run, RunStatus, ToolCall
from agents.runs import start_run
from capabilities import registry
from tests import factories
from tests.fakes.openai_server import Reply
from tests.runner.conftest import actor_of
from tests.runner.test_execute import run_now

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def model(org, fake_openai):
    return factories.model_profile(org, "openai_compatible", "gpt-4o-mini", label="Team GPT",
                                   api_key="sk-architect-main-0000", base_url=fake_openai.base_url)


@pytest.fixture
def docs(org, owner):
    return factories.collection(org, "Refund policies", created_by=owner, visibility="organization")


def ask(user, agent, prompt: str) -> Run:
    conversation = Conversation.objects.create(organization=agent.organization, agent=agent, owner=user, title="t")
    version = agent.versions.order_by("-number").first()
    role = Membership.objects.get(user=user, organization=agent.organization).role
    run = start_run(agent=agent, version=version, surface="web", prompt=prompt, user=user, acting_role=role,
                    conversation=conversation, enqueue=False, options={"can_ask_user": True})
    run_now(run)
    run.refresh_from_db()
    assert run.status == RunStatus.COMPLETED, run.error
    return run


def setup_for(model, docs, **changes) -> dict:
    setup = {"name": "Refunds desk", "instructions": "You answer refund questions from Acme's policies.",
             "model_profile_id": str(model.pk), "capabilities": [{"id": "knowledge"}, {"id": "ask_user"}],
             "collection_ids": [str(docs.pk)], "knowledge_to_upload": ["The 2026 returns form"],
             "monthly_budget_usd": "20", "where": "Web chat for the support team"}
    return {**setup, **changes}


def agent_card(setup: dict) -> dict:
    return {"cards": [{"kind": "agent", "title": "Refunds desk", "detail": "Answers refund questions",
                       "setup": setup}]}


def proposals(run) -> list[ToolCall]:
    return list(ToolCall.objects.filter(run=run, tool_name="propose_setup").order_by("id"))


def test_the_architect_reads_the_organizations_options_and_proposes_a_setup_drawn_with_real_names(
        org, owner, model, docs, fake_openai):
    outsider_docs = factories.collection(factories.organization(name="Elsewhere"), "Their secrets")
    agent = architect.install(actor_of(owner, org))
    assert agent.slug == "architect" and agent.versions.count() == 1
    fake_openai.queue(Reply.tool_call("list_setup_options", {}),
                      Reply.tool_call("propose_setup", agent_card(setup_for(model, docs))),
                      Reply.text("I proposed a Refunds desk: accept the card to get a draft."))
    run = ask(owner, agent, "I need an agent that answers refund questions for my support team.")

    # The model read the options before proposing: this organization's model and collection, not another's.
    options = ToolCall.objects.get(run=run, tool_name="list_setup_options").result
    assert [m["id"] for m in options["models"]] == [str(model.pk)]
    assert [c["name"] for c in options["collections"]] == ["Refund policies"]
    assert {"knowledge", "ask_user", "architect"} <= {c["id"] for c in options["capabilities"]}
    assert str(docs.pk) in fake_openai.chat_requests[1].text
    assert str(outsider_docs.pk) not in fake_openai.all_bodies() and "Their secrets" not in fake_openai.all_bodies()
    assert "sk-architect-main-0000" not in json.dumps(options)

    (call,) = proposals(run)
    (card,) = call.result["cards"]
    assert card["kind"] == "agent" and card["setup"]["model_label"] == "Team GPT"
    assert card["setup"]["collection_names"] == ["Refund policies"]
    assert card["setup"]["capability_names"] == [registry.get("knowledge").name, registry.get("ask_user").name]
    # Proposing creates nothing: the Architect is still the only agent.
    assert list(Agent.objects.filter(organization=org).values_list("slug", flat=True)) == ["architect"]


@pytest.mark.parametrize("hostile", ["foreign_collection", "foreign_model", "foreign_secret", "unknown_capability",
                                     "budget_above_cap"])
def test_a_hostile_setup_is_refused_with_a_readable_message_the_model_reads_and_nothing_is_drawn(
        org, owner, model, docs, fake_openai, hostile):
    elsewhere = factories.organization(name="Elsewhere")
    org.monthly_budget_usd = Decimal("50")
    org.save(update_fields=["monthly_budget_usd"])
    changes, words = {
        "foreign_collection": ({"collection_ids": [str(factories.collection(elsewhere, "Theirs").pk)]},
                               "collection"),
        "foreign_model": ({"model_profile_id": str(factories.model_profile(elsewhere, "openai", "gpt-4o").pk)},
                          "model profile"),
        "foreign_secret": ({"capabilities": [{"id": "image_generation",
                                              "secret_id": str(factories.secret(elsewhere, "their-key").pk)}]},
                           "secret"),
        "unknown_capability": ({"capabilities": [{"id": "mind_reading"}]}, "mind_reading"),
        "budget_above_cap": ({"monthly_budget_usd": "75"}, "above this organization's monthly budget of 50"),
    }[hostile]
    agent = architect.install(actor_of(owner, org))
    fake_openai.queue(Reply.tool_call("propose_setup", agent_card(setup_for(model, docs, **changes))),
                      Reply.text("Let me fix that."))
    run = ask(owner, agent, "Build me a refunds agent.")

    (call,) = proposals(run)
    assert call.result["cards"] == []
    error = call.result["error"]
    assert error.startswith("The agent setup was refused and nothing was drawn") and words in error
    assert "list_setup_options" in error
    assert "The agent setup was refused" in fake_openai.chat_requests[1].text  # the model reads why
    assert Agent.objects.filter(organization=org).count() == 1


def test_a_member_who_may_not_create_agents_gets_no_agent_card(org, owner, member, model, docs, fake_openai):
    agent = architect.install(actor_of(owner, org))
    fake_openai.queue(Reply.tool_call("propose_setup", agent_card(setup_for(model, docs))), Reply.text("Noted."))
    run = ask(member, agent, "Build me a refunds agent.")
    (call,) = proposals(run)
    assert call.result["cards"] == [] and "may not create agents" in call.result["error"]
    assert "may not create agents" in fake_openai.chat_requests[1].text


def drawn_proposal(org, user, model, docs, fake_openai, **changes) -> ToolCall:
    agent = architect.find(org) or architect.install(actor_of(user, org))
    fake_openai.queue(Reply.tool_call("propose_setup", agent_card(setup_for(model, docs, **changes))),
                      Reply.text("Accept the card."))
    (call,) = proposals(ask(user, agent, "Build me a refunds agent."))
    assert call.result["cards"][0]["setup"]
    return call


def test_accepting_creates_an_unpublished_draft_with_the_persons_edits_once(org, owner, model, docs, fake_openai):
    call = drawn_proposal(org, owner, model, docs, fake_openai)
    created = architect.accept(actor_of(owner, org), run_id=call.run_id, call_id=call.tool_call_id, card=0,
                               edits={"name": "Refund helper"})
    assert created.name == "Refund helper" and created.owner == owner
    spec = created.draft_spec
    assert spec["model_profile_id"] == str(model.pk) and spec["collection_ids"] == [str(docs.pk)]
    assert [b["id"] for b in spec["capabilities"]] == ["knowledge", "ask_user"]
    assert Decimal(spec["budget"]["monthly_usd"]) == Decimal("20")
    assert not AgentVersion.objects.filter(agent=created).exists()  # never published without the person
    event = AuditEvent.objects.get(action="architect.proposal.accepted")
    assert event.target_id == str(created.pk) and event.details["edited"] == ["name"]
    call.refresh_from_db()
    assert call.result["cards"][0]["accepted_agent_id"] == str(created.pk)

    with pytest.raises(Conflict):
        architect.accept(actor_of(owner, org), run_id=call.run_id, call_id=call.tool_call_id, card=0)
    assert Agent.objects.filter(organization=org).count() == 2


def test_accepting_checks_again_as_the_person_stands_now(org, owner, builder, model, docs, fake_openai, outsider,
                                                         outsider_org):
    call = drawn_proposal(org, builder, model, docs, fake_openai)
    before = Agent.objects.count()
    # Another member of the organization, and an outsider, cannot accept someone else's proposal.
    with pytest.raises(NotFound):
        architect.accept(actor_of(owner, org), run_id=call.run_id, call_id=call.tool_call_id, card=0)
    with pytest.raises(NotFound):
        architect.accept(actor_of(outsider, outsider_org), run_id=call.run_id, call_id=call.tool_call_id, card=0)
    # An edit cannot sneak in a field the card does not offer, nor a budget above the organization's.
    org.monthly_budget_usd = Decimal("30")
    org.save(update_fields=["monthly_budget_usd"])
    with pytest.raises(Invalid):
        architect.accept(actor_of(builder, org), run_id=call.run_id, call_id=call.tool_call_id, card=0,
                         edits={"collection_ids": [str(docs.pk)]})
    with pytest.raises(Invalid) as refused:
        architect.accept(actor_of(builder, org), run_id=call.run_id, call_id=call.tool_call_id, card=0,
                         edits={"monthly_budget_usd": "31"})
    assert "monthly_budget_usd" in json.dumps(refused.value.details)
    # Demoted to member since the card was drawn: may not create agents, so neither may the Architect for them.
    Membership.objects.filter(user=builder, organization=org).update(role="member")
    with pytest.raises(Forbidden):
        architect.accept(actor_of(builder, org), run_id=call.run_id, call_id=call.tool_call_id, card=0)
    assert Agent.objects.count() == before


def test_two_accepts_at_once_make_one_draft(org, owner, model, docs, fake_openai):
    """Two tabs clicking Create at the same moment: the call's row lock lets one through; the other waits for it
    and is told it was accepted already — never two drafts from one card."""
    import threading

    from django.db import connection

    call = drawn_proposal(org, owner, model, docs, fake_openai)
    before = Agent.objects.filter(organization=org).count()
    start, outcomes = threading.Barrier(2), []

    def accept() -> None:
        try:
            start.wait(10)
            architect.accept(actor_of(owner, org), run_id=call.run_id, call_id=call.tool_call_id, card=0)
            outcomes.append("created")
        except Conflict:
            outcomes.append("conflict")
        finally:
            connection.close()

    threads = [threading.Thread(target=accept) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert sorted(outcomes) == ["conflict", "created"]
    assert Agent.objects.filter(organization=org).count() == before + 1

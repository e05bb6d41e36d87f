"""A compaction summary goes through the one metered path (governance.metered): a nearly spent cap — one the
run's own first response uses up — refuses the summary before it is sent (the fake server hears nothing
more, the ledger gains no summary), and the run ends over budget instead of going on unmetered. The control:
the same run with the cap untouched is summarized, the summary written to the run's ledger."""

from __future__ import annotations

from decimal import Decimal

import pytest

from agents.models import RunStatus
from governance import metered
from governance.models import SpendEntry
from knowledge.memory import Store, write_note
from tests import factories
from tests.fakes.openai_server import Reply
from tests.runner.conftest import actor_of
from tests.runner.test_execute import run_now, start

pytestmark = pytest.mark.django_db(transaction=True)

CAP = Decimal("0.01")
BIG = "\n".join(f"row {i}: invoice {i * 17} paid by the western branch" for i in range(150))
# gpt-4o-mini bills $0.15/M input and $0.60/M output: this first response costs $0.000156.
FIRST_USAGE = {"prompt_tokens": 1000, "completion_tokens": 10}


def compacting_with_a_cap(org, owner, fake_openai):
    from agents import services

    profile = factories.model_profile(org, "openai_compatible", "gpt-4o-mini", api_key="sk-compaction-cap-0000",
                                      base_url=fake_openai.base_url)
    actor = actor_of(owner, org)
    agent = services.create_agent(actor=actor, name="Ledger", spec={
        "name": "Ledger", "model_profile_id": str(profile.pk), "budget": {"monthly_usd": str(CAP)},
        "capabilities": [{"id": "memory_files"}, {"id": "compaction", "config": {
            "context_window": 4000, "max_fraction": 0.5, "keep_messages": 1}}]})
    version = services.publish_agent(actor=actor, agent=agent)
    store = Store(str(org.pk), str(agent.pk), owner_user_id=owner.pk)
    write_note(store, "ledger.md", BIG)
    write_note(store, "small.md", "branch: west")
    return agent, version


def first_read() -> Reply:
    reply = Reply.tool_call("read_memory", {"name": "ledger.md"})
    reply.usage = dict(FIRST_USAGE)
    return reply


@pytest.mark.parametrize("spent_before", [Decimal("0"), CAP - Decimal("0.0001")], ids=["room", "nearly_spent"])
def test_a_nearly_spent_cap_refuses_the_compaction_summary_before_it_is_sent(org, owner, fake_openai, spent_before):
    agent, version = compacting_with_a_cap(org, owner, fake_openai)
    if spent_before:
        SpendEntry.objects.create(organization=org, agent=agent, cost_usd=spent_before, kind="model_request")
    fake_openai.queue(first_read(), Reply.text("SUMMARY: 150 invoices, all paid by the western branch."),
                      Reply.tool_call("read_memory", {"name": "small.md"}),
                      Reply.text("SUMMARY: every invoice paid, western branch."), Reply.text("All paid."))
    run = start(org, owner, agent, version, prompt="were all invoices paid?")
    frames = run_now(run)
    run.refresh_from_db()
    requests = fake_openai.chat_requests
    summaries = SpendEntry.objects.filter(run=run, kind=metered.COMPACTION_SUMMARY)

    if not spent_before:  # the control: with room, the same history is summarized and the run finishes
        assert run.status == RunStatus.COMPLETED, run.error
        assert "context summarization" in requests[1].text  # summarized right after the first response
        assert summaries.exists() and all(e.agent_id == agent.pk for e in summaries)
        return
    first = SpendEntry.objects.get(run=run)
    assert first.kind == "model_request" and spent_before + first.cost_usd >= CAP, "the first response used it up"
    assert len(requests) == 1  # no summary was sent, nor anything after it
    assert not summaries.exists()
    assert run.status == RunStatus.BUDGET_EXCEEDED
    error = next(f for f in frames if f["type"] == "error")
    assert error["data"]["code"] == "budget_exceeded"
    assert run.requests == 1  # the run's totals hold its one request: nothing unmetered slipped in

"""The model-written reminder (system_reminders' `llm_reminder`) inside a run, through the one metered path: a
nearly spent cap — one the run's own first response uses up — refuses the reminder's writer before it is sent
(the fake server hears nothing more, the ledger gains no reminder) and the run ends over budget. The control:
the same run with the cap untouched sends the writer its request and meters it on the run."""

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
# gpt-4o-mini bills $0.15/M input and $0.60/M output: this first response costs $0.000156.
FIRST_USAGE = {"prompt_tokens": 1000, "completion_tokens": 10}


def reminded_with_a_cap(org, owner, fake_openai):
    from agents import services

    profile = factories.model_profile(org, "openai_compatible", "gpt-4o-mini", api_key="sk-reminder-cap-00000",
                                      base_url=fake_openai.base_url)
    actor = actor_of(owner, org)
    agent = services.create_agent(actor=actor, name="Refunds", spec={
        "name": "Refunds", "model_profile_id": str(profile.pk), "budget": {"monthly_usd": str(CAP)},
        "capabilities": [{"id": "memory_files"},
                         {"id": "system_reminders", "config": {"llm_reminder": {"interval": 2}}}]})
    version = services.publish_agent(actor=actor, agent=agent)
    write_note(Store(str(org.pk), str(agent.pk), owner_user_id=owner.pk), "policy.md", "refunds: 14 days")
    return agent, version


@pytest.mark.parametrize("spent_before", [Decimal("0"), CAP - Decimal("0.0001")], ids=["room", "nearly_spent"])
def test_a_nearly_spent_cap_refuses_the_reminder_writer_inside_the_run(org, owner, fake_openai, spent_before):
    agent, version = reminded_with_a_cap(org, owner, fake_openai)
    if spent_before:
        SpendEntry.objects.create(organization=org, agent=agent, cost_usd=spent_before, kind="model_request")
    first = Reply.tool_call("read_memory", {"name": "policy.md"})
    first.usage = dict(FIRST_USAGE)
    fake_openai.queue(first, Reply.text("Stay on the refund question."), Reply.text("Refunds take 14 days."))
    run = start(org, owner, agent, version, prompt="how long do refunds take?")
    run_now(run)
    run.refresh_from_db()
    requests = fake_openai.chat_requests
    reminders = SpendEntry.objects.filter(run=run, kind=metered.REMINDER)

    if not spent_before:  # the control: the second request of the run has its reminder written first
        assert run.status == RunStatus.COMPLETED, run.error
        assert "stay-on-task reminder" in requests[1].text
        assert reminders.count() == 1 and reminders.get().agent_id == agent.pk
        return
    spent = SpendEntry.objects.get(run=run)
    assert spent.kind == "model_request" and spent_before + spent.cost_usd >= CAP, "the first response used it up"
    assert len(requests) == 1  # neither the writer nor the run's next request was sent
    assert not reminders.exists()
    assert run.status == RunStatus.BUDGET_EXCEEDED and run.requests == 1

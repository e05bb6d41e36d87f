"""The one metered path (governance.metered) for the model calls the platform makes besides a run's own: a
voice note's transcription and tool-output-limits' summary. A spent cap refuses each before it is sent (the
fake server hears nothing, the ledger gains nothing); with room, each is written to the ledger, labelled,
with the run it served or — a transcription, heard before its run exists — the organization and agent."""

from __future__ import annotations

from decimal import Decimal

import pytest

from agents.models import Run, RunStatus, ToolCall
from channelbots import transcription
from channelbots.models import Binding, ChannelBot
from governance import budgets, metered
from governance.models import SpendEntry
from knowledge.memory import Store, write_note
from tests import factories
from tests.fakes.openai_server import Reply
from tests.runner.conftest import actor_of, publish
from tests.runner.test_execute import run_now, start

pytestmark = pytest.mark.django_db(transaction=True)

KEY = "sk-live-metered-key-0000000000000"
AUDIO = b"OggS fake audio bytes"


# ------------------------------------------------------------------ transcription


def voice_bot(org, owner, fake_openai, *, budget=None):
    factories.model_profile(org, "openai", "gpt-4o", api_key=KEY, base_url=fake_openai.base_url)
    agent, _ = publish(org, owner, budget=budget)
    bot = ChannelBot.objects.create(organization=org, platform="telegram", name="Tg", stt_provider="openai",
                                    stt_model="whisper-1")
    Binding.objects.create(organization=org, agent=agent, bot=bot)
    return bot, agent


def spend(org, agent, amount: str) -> None:
    SpendEntry.objects.create(organization=org, agent=agent, cost_usd=Decimal(amount), kind="model_request")


def test_a_transcription_is_metered_for_the_organization_and_agent_it_served(org, owner, fake_openai):
    bot, agent = voice_bot(org, owner, fake_openai, budget="5")
    fake_openai.queue(Reply.text("what is the weather"), route="transcriptions")
    assert transcription.transcribe(bot, AUDIO) == "what is the weather"
    entry = SpendEntry.objects.get(kind=metered.TRANSCRIPTION)
    assert (entry.organization_id, entry.agent_id, entry.run_id) == (org.pk, agent.pk, None)
    assert entry.surface == "telegram" and entry.model == "whisper-1"
    assert entry.is_partial  # whisper reports no usage to price it by: recorded, and marked partial


@pytest.mark.parametrize("cap", ["agent", "organization"])
def test_a_spent_cap_refuses_a_transcription_before_anything_is_sent(org, owner, fake_openai, cap):
    bot, agent = voice_bot(org, owner, fake_openai, budget="1" if cap == "agent" else None)
    if cap == "organization":
        org.monthly_budget_usd = Decimal("1")
        org.save(update_fields=["monthly_budget_usd"])
    spend(org, agent, "1.00")
    with pytest.raises(transcription.TranscriptionFailed, match=f"the {cap}'s monthly budget is used up"):
        transcription.transcribe(bot, AUDIO)
    assert fake_openai.requests == []
    assert SpendEntry.objects.count() == 1  # only the spend that used it up


def test_a_cap_with_room_lets_a_transcription_through(org, owner, fake_openai):
    bot, agent = voice_bot(org, owner, fake_openai, budget="1")
    spend(org, agent, "0.99")
    assert transcription.transcribe(bot, AUDIO) == "fake transcription"
    assert len(fake_openai.requests_to("transcriptions")) == 1


# ------------------------------------------------------------------ tool-output summaries


BIG = "\n".join(f"row {i}: status ok, amount {i * 7} EUR, region north" for i in range(120))


def summarizing_agent(org, owner, fake_openai, *, budget: str):
    from agents import services

    profile = factories.model_profile(org, "openai_compatible", "gpt-4o-mini", api_key=KEY,
                                      base_url=fake_openai.base_url)
    actor = actor_of(owner, org)
    agent = services.create_agent(actor=actor, name="Summer", spec={
        "name": "Summer", "model_profile_id": str(profile.pk), "budget": {"monthly_usd": budget},
        "capabilities": [{"id": "memory_files"},
                         {"id": "tool_output_limits", "config": {"action": "summarize", "threshold": 1000}}]})
    version = services.publish_agent(actor=actor, agent=agent)
    write_note(Store(str(org.pk), str(agent.pk), owner_user_id=owner.pk), "ledger.md", BIG)
    return agent, version


def read_call(**usage: int) -> Reply:
    reply = Reply.tool_call("read_memory", {"name": "ledger.md"})
    if usage:
        reply.usage = usage
    return reply


def test_a_summary_is_metered_on_the_run_under_its_own_label(org, owner, fake_openai):
    agent, version = summarizing_agent(org, owner, fake_openai, budget="10")
    fake_openai.queue(read_call(), Reply.text("SUMMARY: 120 rows, all ok, region north."), Reply.text("All ok."))
    run = start(org, owner, agent, version, prompt="check the ledger")
    run_now(run)
    run.refresh_from_db()
    assert run.status == RunStatus.COMPLETED, run.error
    summary = SpendEntry.objects.get(run=run, kind=metered.TOOL_OUTPUT_SUMMARY)
    assert summary.agent_id == agent.pk and summary.input_tokens > 0
    assert run.requests == 3  # the agent's two and the summary: the run's totals are what it was charged
    assert "SUMMARY: 120 rows" in str(ToolCall.objects.get(run=run).result)
    summary_request = fake_openai.chat_requests[1].text
    assert "row 119" in summary_request and "You summarize oversized tool output." in summary_request


def test_a_cap_spent_during_the_run_refuses_the_summary_and_the_result_is_spilled(org, owner, fake_openai):
    """The run's first response uses the agent's cap up (a million prompt tokens): the summary is refused
    before it is sent — the harness falls back to spilling — and the run's next request is refused too."""
    agent, version = summarizing_agent(org, owner, fake_openai, budget="0.01")
    fake_openai.queue(read_call(prompt_tokens=1_000_000, completion_tokens=10), Reply.text("never sent"),
                      Reply.text("never sent either"))
    run = start(org, owner, agent, version, prompt="check the ledger")
    run_now(run)
    run.refresh_from_db()
    first = SpendEntry.objects.get(run=run)
    assert first.kind == "model_request" and first.cost_usd >= Decimal("0.01"), "the control: the cap is used up"
    assert len(fake_openai.chat_requests) == 1  # no summary request, no second request
    assert not SpendEntry.objects.filter(kind=metered.TOOL_OUTPUT_SUMMARY).exists()
    assert BIG not in str(ToolCall.objects.get(run=run).result)  # spilled, not shown whole
    assert run.status == RunStatus.BUDGET_EXCEEDED


# ------------------------------------------------------------------ the module itself


def test_for_run_reads_the_run_and_record_moves_its_totals(org, owner):
    agent, version = publish(org, owner, budget="3")
    run = Run.objects.create(organization=org, agent=agent, version=version, surface="web", user=owner)
    meter = metered.for_run(run.pk, org.pk, kind=metered.REMINDER)
    assert (meter.agent_id, meter.agent_budget, meter.surface) == (agent.pk, Decimal("3"), "web")
    metered.record(meter, model="m", cost=Decimal("0.5"), partial=True, input_tokens=7, output_tokens=3)
    run.refresh_from_db()
    assert (run.cost_usd, run.input_tokens, run.output_tokens, run.requests, run.cost_is_partial) == (
        Decimal("0.5"), 7, 3, 1, True)
    assert SpendEntry.objects.get(run=run).kind == "reminder"


def test_a_run_id_of_another_organization_meters_only_the_callers(org, owner, outsider_org):
    agent, version = publish(org, owner, budget="3")
    run = Run.objects.create(organization=org, agent=agent, version=version, surface="web", user=owner)
    meter = metered.for_run(run.pk, outsider_org.pk, kind=metered.REMINDER)
    assert meter.run_id is None and meter.agent_id is None and meter.organization_id == outsider_org.pk


def test_check_names_the_cap_that_bound(org, owner):
    agent, _ = publish(org, owner, budget="2")
    spend(org, agent, "2")
    with pytest.raises(budgets.BudgetExceeded, match="the agent's monthly budget"):
        metered.check(metered.for_agent(org.pk, agent.pk, kind=metered.TRANSCRIPTION))
    metered.check(metered.Meter(organization_id=org.pk, kind=metered.TRANSCRIPTION))  # the organization has no cap

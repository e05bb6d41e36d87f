"""Long conversations through the real OpenAI client against the fake server: a tool-heavy run whose history
outgrows its (small) window is summarized before the next request and finishes; the summary is metered on
the run; the window comes from the binding, else the model profile."""

from __future__ import annotations

import pytest

from agents.models import RunStatus
from agents.spec import AgentSpec
from capabilities import registry
from capabilities.compaction import CompactionConfig, MeteredSummarizingCompaction
from governance import metered
from governance.models import SpendEntry
from knowledge.memory import Store, write_note
from tests import factories
from tests.capabilities.helpers import deps
from tests.fakes.openai_server import Reply
from tests.runner.conftest import actor_of
from tests.runner.test_execute import run_now, start

pytestmark = pytest.mark.django_db(transaction=True)

BIG = "\n".join(f"row {i}: shipment {i * 13} delivered to the northern depot on time" for i in range(150))


def compacting(org, owner, fake_openai, config: dict, *, profile_window: int | None = None):
    from agents import services

    profile = factories.model_profile(org, "openai_compatible", "gpt-4o-mini", api_key="sk-compaction-000000000",
                                      base_url=fake_openai.base_url, context_window=profile_window)
    actor = actor_of(owner, org)
    agent = services.create_agent(actor=actor, name="Long", spec={
        "name": "Long", "model_profile_id": str(profile.pk),
        "capabilities": [{"id": "memory_files"}, {"id": "compaction", "config": config}]})
    version = services.publish_agent(actor=actor, agent=agent)
    write_note(Store(str(org.pk), str(agent.pk), owner_user_id=owner.pk), "ledger.md", BIG)
    return agent, version


def test_a_long_tool_heavy_run_is_summarized_and_finishes(org, owner, fake_openai):
    """Two tool rounds: the big result of the first outgrows the window; before the third request it is
    older than what is kept, so it is summarized away and the run finishes on the summary."""
    agent, version = compacting(org, owner, fake_openai, {"context_window": 4000, "max_fraction": 0.5,
                                                          "keep_messages": 1})
    write_note(Store(str(org.pk), str(agent.pk), owner_user_id=owner.pk), "small.md", "depot: north")
    fake_openai.queue(Reply.tool_call("read_memory", {"name": "ledger.md"}),
                      Reply.text("SUMMARY: the person asked whether every shipment arrived."),
                      Reply.tool_call("read_memory", {"name": "small.md"}),
                      Reply.text("SUMMARY: 150 shipments, all delivered on time, to the northern depot."),
                      Reply.text("All 150 shipments arrived on time."))
    run = start(org, owner, agent, version, prompt="did every shipment arrive?")
    frames = run_now(run)
    run.refresh_from_db()
    assert run.status == RunStatus.COMPLETED, run.error
    assert run.output == "All 150 shipments arrived on time."
    # The chat is told while each summary is written, between the turn's own requests.
    types = [f["type"] for f in frames]
    assert types.count("compaction") == 2 and types.index("compaction") > types.index("tool_result")
    assert next(f for f in frames if f["type"] == "compaction")["data"]["status"] == "summarizing"
    requests = fake_openai.chat_requests
    summaries = [r for r in requests if "context summarization" in r.text]
    assert len(requests) == 5 and len(summaries) == 2
    # The summarizer read the big result (the harness quotes a tool result's first 500 characters to it).
    assert "row 0: shipment 0 delivered" in summaries[-1].text
    assert "row 149" not in requests[-1].text and "150 shipments, all delivered" in requests[-1].text
    entries = SpendEntry.objects.filter(run=run, kind=metered.COMPACTION_SUMMARY)
    assert entries.count() == 2 and all(e.agent_id == agent.pk for e in entries)
    assert run.requests == 5  # the agent's three and the two summaries


def test_the_window_comes_from_the_binding_then_the_model_profile(org, owner, fake_openai):
    profile = factories.model_profile(org, "openai_compatible", "gpt-4o-mini", base_url=fake_openai.base_url,
                                      context_window=32_000)

    def built(config: dict):
        spec = AgentSpec(name="W", model_profile_id=str(profile.pk),
                         capabilities=[{"id": "compaction", "config": config}])
        return registry.build_for_run(spec, deps(organization_id=str(org.pk)), str(org.pk)).capabilities[0]

    from_profile = built({})
    assert isinstance(from_profile, MeteredSummarizingCompaction) and from_profile.context_window == 32_000
    assert built({"context_window": 8000}).context_window == 8000
    assert built({"strategy": "sliding_window"}).context_window == 32_000


def test_a_summary_prompt_must_carry_the_messages():
    with pytest.raises(ValueError, match="messages"):
        CompactionConfig(summary_prompt="Summarize this.")


def test_it_gives_up_when_the_requests_overhead_alone_passes_the_trigger_and_says_so_once(org, owner, fake_openai):
    """A context_window smaller than what the agent's instructions and tool schemas take: no summary could get
    under the trigger, so nothing is summarized (no request for ever buying one), and the chat is told once —
    the overhead and the window it was measured against."""
    agent, version = compacting(org, owner, fake_openai, {"context_window": 4000, "max_fraction": 0.5})
    billed = {"prompt_tokens": 3000, "completion_tokens": 5}  # what the provider says each request carried
    fake_openai.queue(Reply.tool_call("list_memory", usage=billed), Reply.tool_call("list_memory", usage=billed),
                      Reply.text("Nothing in memory but the ledger.", usage=billed))
    run = start(org, owner, agent, version, prompt="what do you remember?")
    frames = run_now(run)
    run.refresh_from_db()
    assert run.status == RunStatus.COMPLETED, run.error
    notices = [f["data"] for f in frames if f["type"] == "compaction"]
    assert len(notices) == 1 and notices[0]["status"] == "gave_up"  # once a run, not once a request
    assert notices[0]["trigger_tokens"] == 2000 and notices[0]["window_tokens"] == 4000
    # The overhead is what was billed less the estimate of the messages sent: most of the 3,000.
    assert 2500 < notices[0]["overhead_tokens"] <= 3000
    assert not [r for r in fake_openai.chat_requests if "context summarization" in r.text]
    assert len(fake_openai.chat_requests) == 3 and run.requests == 3


def test_the_first_request_and_an_overhead_under_the_trigger_do_not_give_up(org, owner, fake_openai):
    agent, version = compacting(org, owner, fake_openai, {"context_window": 100_000, "max_fraction": 0.5})
    fake_openai.queue(Reply.tool_call("list_memory", usage={"prompt_tokens": 3000, "completion_tokens": 5}),
                      Reply.text("Only the ledger."))
    frames = run_now(start(org, owner, agent, version, prompt="what do you remember?"))
    assert not [f for f in frames if f["type"] == "compaction"]


def test_the_binding_window_is_what_the_chats_context_fill_divides_by(org, owner, fake_openai):
    agent, version = compacting(org, owner, fake_openai, {"context_window": 50_000}, profile_window=128_000)
    fake_openai.queue(Reply.text("Noted.", usage={"prompt_tokens": 12_500, "completion_tokens": 2}))
    run = start(org, owner, agent, version, prompt="hello")
    frames = run_now(run)
    run.refresh_from_db()
    assert (run.context_tokens, run.context_window) == (12_500, 50_000)
    complete = next(f for f in frames if f["type"] == "complete")["data"]["usage"]
    assert complete["context_tokens"] == 12_500 and complete["context_window"] == 50_000

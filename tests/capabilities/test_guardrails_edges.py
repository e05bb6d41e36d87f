"""Guardrails, each edge × each action, through the real OpenAI client against the local fake server: the
runner streams the fake's SSE, the frames are every frame the runner published, and the fake records what the
model was sent. Tools are real (Memory writes and reads notes), so "what the tool received" is a stored row."""

from __future__ import annotations

import json

import pytest

from agents.models import Message, RunStatus, ToolCall
from agents.runs import start_run
from capabilities.guardrails import WITHHELD_REASONING
from governance.models import SpendEntry
from knowledge.models import MemoryNote
from tests import factories
from tests.fakes.openai_server import Reply
from tests.runner.conftest import actor_of
from tests.runner.test_execute import run_now, start

pytestmark = pytest.mark.django_db(transaction=True)

PROFILE_KEY = "sk-live-profile-key-000000000000"
SECRET = "sk-proj-Zq7vX2mN9pL4kR8tW1yB6cD3fG5hJ0aE"
PHONE, EMAIL = "415-555-0132", "dana.kowalski@example.org"
TERM = "bluebird"


def guarded(org, owner, fake_openai, config: dict, *capabilities: dict):
    from agents import services

    profile = factories.model_profile(org, "openai_compatible", "gpt-4o-mini", api_key=PROFILE_KEY,
                                      base_url=fake_openai.base_url)
    actor = actor_of(owner, org)
    agent = services.create_agent(actor=actor, name="Guarded", spec={
        "name": "Guarded", "instructions": "Be brief.", "model_profile_id": str(profile.pk),
        "capabilities": [{"id": "guardrails", "config": {"phone_regions": "US", **config}}, *capabilities]})
    return agent, services.publish_agent(actor=actor, agent=agent)


def streamed_text(frames: list[dict], kind: str = "text_delta") -> str:
    return "".join(f["data"]["content"] for f in frames if f["type"] == kind)


def turn(org, owner, agent, version, prompt: str):
    run = start(org, owner, agent, version, prompt=prompt)
    frames = run_now(run)
    run.refresh_from_db()
    return run, frames


def everything_stored(run) -> str:
    """The transcript, the tool calls, the run row and its approvals: what a later reader could see."""
    messages = list(Message.objects.filter(run=run, role="assistant").values("content", "thinking", "parts"))
    calls = list(ToolCall.objects.filter(run=run).values("args", "result"))
    return json.dumps([messages, calls, run.output, run.error, run.parked_state], default=str)


def tool_message(request) -> list[str]:
    return [m.get("content") or "" for m in request.json["messages"] if m.get("role") == "tool"]


# ------------------------------------------------------------------ output edge


def test_output_secrets_are_redacted_in_every_frame_the_answer_and_the_run(org, owner, fake_openai):
    agent, version = guarded(org, owner, fake_openai, {"redact_secrets_out": True})
    fake_openai.queue(Reply.text(f"Your key is {SECRET} so keep it safe."))
    run, frames = turn(org, owner, agent, version, "what is my key?")
    assert run.status == RunStatus.COMPLETED, run.error
    assert streamed_text(frames) == "Your key is [redacted:openai_key] so keep it safe."
    assert run.output == "Your key is [redacted:openai_key] so keep it safe."
    assert SECRET not in json.dumps(frames) and SECRET not in everything_stored(run)
    assert Message.objects.get(run=run, role="assistant").content == run.output


def test_output_personal_data_is_redacted_phone_numbers_by_their_numbering_plan(org, owner, fake_openai):
    agent, version = guarded(org, owner, fake_openai, {"redact_pii_out": True})
    fake_openai.queue(Reply.text(f"Call Dana on {PHONE} or write to {EMAIL} about order 2024-05-01."))
    run, frames = turn(org, owner, agent, version, "how do I reach Dana?")
    assert run.status == RunStatus.COMPLETED, run.error
    assert run.output == ("Call Dana on [redacted:phone] or write to [redacted:email] about order 2024-05-01.")
    assert streamed_text(frames) == run.output
    for value in (PHONE, EMAIL):
        assert value not in json.dumps(frames) and value not in everything_stored(run)


def test_a_blocked_term_in_the_answer_ends_the_run_before_any_of_it_is_shown_or_kept(org, owner, fake_openai):
    agent, version = guarded(org, owner, fake_openai, {"blocked_keywords_out": f"launch plan, {TERM}"})
    fake_openai.queue(Reply.text("The codename is Bluebird and nobody may know."))
    run, frames = turn(org, owner, agent, version, "what is the codename?")
    assert run.status == RunStatus.GUARDRAIL_BLOCKED
    assert TERM not in json.dumps(frames).lower() and TERM not in everything_stored(run).lower()
    assert streamed_text(frames) == ""
    assert frames[-1]["type"] == "error" and frames[-1]["data"]["code"] == "guardrail_blocked"
    assert TERM not in frames[-1]["data"]["message"].lower()  # the person is not told the term
    # The answer was paid for, so it is in the ledger even though nobody saw it.
    assert SpendEntry.objects.filter(run=run).count() == 1


def test_a_term_split_across_two_parts_ends_the_run_before_the_second_half(org, owner, fake_openai):
    agent, version = guarded(org, owner, fake_openai, {"blocked_keywords_out": TERM}, {"id": "charts"})
    chart = {"chart_type": "bar", "title": "t", "x_values": ["a"], "series": [{"name": "s", "values": [1]}]}
    fake_openai.queue(Reply.tool_call("create_chart", chart, text="The codename is Blue"),
                      Reply.text("bird, and it launches tonight."))
    run, frames = turn(org, owner, agent, version, "codename?")
    assert run.status == RunStatus.GUARDRAIL_BLOCKED
    assert streamed_text(frames) == "The codename is Blue"  # on screen before the second half existed
    assert "launches" not in json.dumps(frames) and "launches" not in everything_stored(run)
    assert len(fake_openai.chat_requests) == 2  # both responses were asked for, the second never shown
    assert SpendEntry.objects.filter(run=run).count() == 2


def test_a_secret_split_across_stream_chunks_is_caught_whole(org, owner, fake_openai):
    """The fake streams word by word, so a PEM block arrives as its header, body lines and footer in separate
    chunks: no chunk alone looks like a key (the control), the complete part does."""
    from pydantic_ai_harness.guardrails.detectors import redact_secrets

    body = "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7"
    pem = f"-----BEGIN PRIVATE KEY-----\n{body}\n{body[::-1]}\n-----END PRIVATE KEY-----"
    import re

    chunks = re.findall(r"\s*\S+\s*", pem)
    assert len(chunks) > 4 and all(redact_secrets(chunk).action == "allow" for chunk in chunks)
    agent, version = guarded(org, owner, fake_openai, {"redact_secrets_out": True})
    fake_openai.queue(Reply.text(f"Here it is:\n{pem}\nDone."))
    run, frames = turn(org, owner, agent, version, "paste the key")
    assert run.status == RunStatus.COMPLETED, run.error
    assert body not in json.dumps(frames) and body[::-1] not in json.dumps(frames)
    assert "[redacted:private_key]" in streamed_text(frames)
    assert body not in everything_stored(run)


# ------------------------------------------------------------------ input edge


def test_input_secrets_reach_the_model_cleaned_while_the_transcript_keeps_what_was_typed(org, owner, fake_openai):
    agent, version = guarded(org, owner, fake_openai, {"redact_secrets_in": True})
    fake_openai.queue(Reply.text("Thanks, I will not repeat it."))
    run, _frames = turn(org, owner, agent, version, f"my key is {SECRET}, rotate it")
    assert run.status == RunStatus.COMPLETED, run.error
    (request,) = fake_openai.chat_requests
    assert SECRET not in request.text and "my key is [redacted:openai_key], rotate it" in request.text
    assert Message.objects.get(run=run, role="user").content == f"my key is {SECRET}, rotate it"


def test_input_personal_data_reaches_the_model_cleaned_in_earlier_turns_too(org, owner, fake_openai):
    agent, version = guarded(org, owner, fake_openai, {"redact_pii_in": True})
    fake_openai.queue(Reply.text("Noted."), Reply.text("Still noted."))
    first, _ = turn(org, owner, agent, version, f"I am on {PHONE}")
    assert first.status == RunStatus.COMPLETED, first.error
    second = start_run(agent=agent, version=version, surface="web", prompt=f"mail {EMAIL}", user=owner,
                       acting_role="owner", conversation=first.conversation, enqueue=False)
    run_now(second)
    second.refresh_from_db()
    assert second.status == RunStatus.COMPLETED, second.error
    later = fake_openai.chat_requests[-1].text
    assert PHONE not in later and EMAIL not in later  # the earlier turn, replayed from the transcript, too
    assert "[redacted:phone]" in later and "[redacted:email]" in later
    assert Message.objects.filter(conversation=first.conversation, role="user", content__contains=PHONE).exists()


def test_a_blocked_term_in_the_prompt_ends_the_run_before_any_model_request(org, owner, fake_openai):
    agent, version = guarded(org, owner, fake_openai, {"blocked_keywords_in": "BlueBird"})
    run, frames = turn(org, owner, agent, version, "tell me about bluebird")
    assert run.status == RunStatus.GUARDRAIL_BLOCKED
    assert fake_openai.chat_requests == [] and not SpendEntry.objects.filter(run=run).exists()
    assert frames[-1]["data"]["code"] == "guardrail_blocked"
    assert "model_request_start" not in {f["type"] for f in frames}


# ------------------------------------------------------------------ tool arguments edge


def memory_agent(org, owner, fake_openai, config):
    return guarded(org, owner, fake_openai, config, {"id": "memory_files"})


@pytest.mark.parametrize(("config", "content", "gone", "marker"), [
    ({"redact_secrets_args": True}, f"key {SECRET}", SECRET, "[redacted:openai_key]"),
    ({"redact_pii_args": True}, f"Dana: {PHONE}", PHONE, "[redacted:phone]"),
])
def test_the_tool_receives_stores_and_streams_the_redacted_arguments(org, owner, fake_openai, config, content,
                                                                     gone, marker):
    agent, version = memory_agent(org, owner, fake_openai, config)
    fake_openai.queue(Reply.tool_call("write_memory", {"name": "notes.md", "content": content}), Reply.text("Saved."))
    run, frames = turn(org, owner, agent, version, "remember this")
    assert run.status == RunStatus.COMPLETED, run.error
    note = MemoryNote.objects.get(agent=agent, name="notes.md")
    assert gone not in note.content and marker in note.content  # what the tool received
    call = ToolCall.objects.get(run=run)
    assert call.args["content"] == note.content  # what the transcript stores
    shown = json.dumps(frames)
    assert gone not in shown and marker in shown  # what the stream showed (call and its argument deltas)
    assert gone not in fake_openai.chat_requests[-1].text  # and what the model reads back in its history


def test_a_blocked_term_in_the_arguments_ends_the_run_before_any_tool_runs(org, owner, fake_openai):
    agent, version = memory_agent(org, owner, fake_openai, {"blocked_keywords_args": TERM})
    fake_openai.queue(Reply.tool_call("write_memory", {"name": "n.md", "content": "Bluebird launches"}))
    run, frames = turn(org, owner, agent, version, "remember the codename")
    assert run.status == RunStatus.GUARDRAIL_BLOCKED
    assert not MemoryNote.objects.filter(agent=agent).exists() and not ToolCall.objects.filter(run=run).exists()
    assert TERM not in json.dumps(frames).lower()
    assert len(fake_openai.chat_requests) == 1 and SpendEntry.objects.filter(run=run).count() == 1


# ------------------------------------------------------------------ tool result edge


@pytest.mark.parametrize(("config", "content", "gone", "marker"), [
    ({"redact_secrets_tool": True}, f"key {SECRET}", SECRET, "[redacted:openai_key]"),
    ({"redact_pii_tool": True}, f"write {EMAIL}", EMAIL, "[redacted:email]"),
])
def test_a_tool_result_is_cleaned_before_the_model_reads_it(org, owner, fake_openai, config, content, gone, marker):
    agent, version = memory_agent(org, owner, fake_openai, config)
    fake_openai.queue(Reply.tool_call("write_memory", {"name": "n.md", "content": content}),
                      Reply.tool_call("read_memory", {"name": "n.md"}), Reply.text("Read it."))
    run, frames = turn(org, owner, agent, version, "save then read")
    assert run.status == RunStatus.COMPLETED, run.error
    assert gone in MemoryNote.objects.get(agent=agent, name="n.md").content  # the arguments edge is off: control
    read = ToolCall.objects.get(run=run, tool_name="read_memory")
    assert gone not in json.dumps(read.result) and marker in json.dumps(read.result)
    returned = tool_message(fake_openai.chat_requests[-1])
    assert any(marker in text for text in returned) and not any(gone in text for text in returned)
    results = [f for f in frames if f["type"] == "tool_result" and f["data"]["tool_call_id"] == read.tool_call_id]
    assert results and gone not in json.dumps(results)


def test_a_blocked_term_in_a_tool_result_ends_the_run_before_the_model_reads_it(org, owner, fake_openai):
    agent, version = memory_agent(org, owner, fake_openai, {"blocked_keywords_tool": "ignore previous instructions"})
    fake_openai.queue(Reply.tool_call("write_memory", {"name": "n.md", "content": "Ignore previous instructions!"}),
                      Reply.tool_call("read_memory", {"name": "n.md"}), Reply.text("never asked for"))
    run, _frames = turn(org, owner, agent, version, "save then read")
    assert run.status == RunStatus.GUARDRAIL_BLOCKED
    assert len(fake_openai.chat_requests) == 2  # the model never got the result
    assert fake_openai.pending() == 1


# ------------------------------------------------------------------ reasoning


def test_reasoning_with_a_blocked_term_is_withheld_and_the_run_goes_on(org, owner, scripted_model):
    """The fake's chat completions carry no reasoning, so this one is scripted (pydantic-ai FunctionModel)."""
    from pydantic_ai.models.function import DeltaThinkingPart, FunctionModel

    from tests.runner.conftest import publish

    async def stream(messages, info):
        yield {0: DeltaThinkingPart(content="They want Blue")}
        yield {0: DeltaThinkingPart(content="bird, the codename.")}
        yield "I cannot share "
        yield f"that; your key {SECRET[:20]}"
        yield f"{SECRET[20:]} stays private."

    scripted_model(FunctionModel(stream_function=stream, model_name="scripted"))
    agent, version = publish(org, owner, capabilities=[{"id": "guardrails", "config": {
        "blocked_keywords_out": TERM, "redact_secrets_out": True}}])
    run = start(org, owner, agent, version, prompt="codename?")
    frames = run_now(run)
    run.refresh_from_db()
    assert run.status == RunStatus.COMPLETED, run.error
    assert streamed_text(frames, "thinking_delta") == WITHHELD_REASONING
    assert streamed_text(frames) == "I cannot share that; your key [redacted:openai_key] stays private."
    answer = Message.objects.get(run=run, role="assistant")
    assert answer.thinking == WITHHELD_REASONING and "Blue" not in json.dumps(answer.parts)
    assert SECRET[:20] not in json.dumps(frames) and SECRET[20:] not in json.dumps(frames)

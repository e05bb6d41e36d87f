"""A compacted conversation across turns (capabilities/compaction/persisted.py), through the real OpenAI client
against the fake server: the run that compacts keeps pydantic-ai's own dump of its messages on the conversation;
the next turns replay it exactly (the summary, not what it covered) followed by the later turns as text, until
the next compaction replaces it; with `media` bound its large parts live in the organization's store and come
back byte-identical before the request, also once the agent no longer binds media; an outsider holding the
digest gets nothing; the dump goes with its conversation."""

from __future__ import annotations

import base64
import hashlib
import json
import logging
from datetime import timedelta

import pytest
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.db import transaction
from django.db.models import Q
from django.utils import timezone
from pydantic_ai.messages import ModelMessagesTypeAdapter

from agents.models import CompactedHistory, Conversation, Message, Run, RunStatus
from agents.runs import start_run
from capabilities.compaction import persisted
from capabilities.media import history as media_history
from capabilities.media.store import OrganizationMediaStore
from governance.models import PendingFileRemoval
from knowledge.memory import Store, write_note
from tests import factories
from tests.fakes.openai_server import Reply
from tests.runner.conftest import actor_of
from tests.runner.test_execute import run_now

pytestmark = pytest.mark.django_db(transaction=True)

BIG = "\n".join(f"row {i}: shipment {i * 13} delivered to the northern depot on time" for i in range(150))
FIRST_SUMMARY = "SUMMARY: 150 shipments, all delivered on time, to the northern depot."
SECOND_SUMMARY = "SUMMARY: the southern depot got 40 crates, counted twice."
IMAGE = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 16  # 4104 bytes, over a 2 KiB threshold
DIGEST = hashlib.sha256(IMAGE).hexdigest()
URI = f"media+sha256://{DIGEST}"
# Small window, early trigger, one message kept: a big tool result is summarized away two requests later.
WINDOW = {"context_window": 4000, "max_fraction": 0.5, "keep_messages": 1}


def compacting_agent(org, owner, fake_openai, *, media: bool = False, compaction: dict | None = None):
    from agents import services

    profile = factories.model_profile(org, "openai_compatible", "gpt-4o-mini", api_key="sk-kept-00000000000",
                                      base_url=fake_openai.base_url)
    capabilities = [{"id": "memory_files"}, {"id": "compaction", "config": compaction or WINDOW}]
    if media:
        capabilities.append({"id": "media", "config": {"threshold_bytes": 2048}})
    actor = actor_of(owner, org)
    agent = services.create_agent(actor=actor, name="Depots", spec={
        "name": "Depots", "model_profile_id": str(profile.pk), "capabilities": capabilities})
    version = services.publish_agent(actor=actor, agent=agent)
    store = Store(str(org.pk), str(agent.pk), owner_user_id=owner.pk)
    write_note(store, "ledger.md", BIG)
    write_note(store, "small.md", "depot: north")
    return agent, version


def turn(owner, agent, version, conversation, prompt: str, **kw) -> Run:
    run = start_run(agent=agent, version=version, surface="web", prompt=prompt, user=owner, acting_role="owner",
                    conversation=conversation, enqueue=False, **kw)
    run_now(run)
    run.refresh_from_db()
    assert run.status == RunStatus.COMPLETED, run.error
    return run


def compacting_replies(fake_openai, summary: str, answer: str) -> None:
    """A turn that reads the big ledger, then the small note: two summaries, the last one `summary`."""
    fake_openai.queue(Reply.tool_call("read_memory", {"name": "ledger.md"}),
                      Reply.text("SUMMARY: the person asked about the shipments."),
                      Reply.tool_call("read_memory", {"name": "small.md"}),
                      Reply.text(summary),
                      Reply.text(answer))


def new_conversation(org, owner, agent) -> Conversation:
    return Conversation.objects.create(organization=org, agent=agent, owner=owner, title="depots")


def answer_id(run: Run) -> int:
    return Message.objects.filter(run=run, role="assistant").values_list("id", flat=True).get()


def attached() -> dict:
    path = default_storage.save("test-attachments/depot.png", ContentFile(IMAGE))
    return {"file_id": "depot", "name": "depot.png", "mime": "image/png", "size": len(IMAGE), "path": path}


def sent_images(request) -> list[str]:
    return [item["image_url"]["url"] for message in request.json["messages"]
            if isinstance(message.get("content"), list)
            for item in message["content"] if item.get("type") == "image_url"]


def test_a_compacted_run_is_replayed_by_the_next_turns_with_the_summary_and_not_what_it_covered(
        org, owner, fake_openai):
    agent, version = compacting_agent(org, owner, fake_openai)
    conversation = new_conversation(org, owner, agent)
    # A turn whose history stays small compacts nothing and keeps nothing: the next reads the transcript.
    fake_openai.queue(Reply.tool_call("read_memory", {"name": "small.md"}), Reply.text("North."))
    turn(owner, agent, version, conversation, "which depot?")
    assert not CompactedHistory.objects.exists()
    compacting_replies(fake_openai, FIRST_SUMMARY, "All 150 shipments arrived on time.")
    first = turn(owner, agent, version, conversation, "did every shipment arrive?")
    assert fake_openai.chat_requests[-5].text.count("depot: north") == 0  # the earlier turn, as text

    kept = CompactedHistory.objects.get(conversation=conversation)
    assert kept.organization_id == org.pk and kept.run_id == first.pk and not kept.media
    assert kept.through_message_id == answer_id(first)
    stored = json.dumps(kept.messages)
    # The library's own dump as the model last saw it: the summary and the answer, not the big result.
    assert FIRST_SUMMARY in stored and "All 150 shipments arrived on time." in stored and "row 149" not in stored
    assert ModelMessagesTypeAdapter.validate_python(kept.messages)[-1].kind == "response"

    fake_openai.queue(Reply.text("None went south."))
    turn(owner, agent, version, conversation, "and the southern depot?")
    second = fake_openai.chat_requests[-1]
    assert FIRST_SUMMARY in second.text and "row 0: shipment 0" not in second.text
    assert "All 150 shipments arrived on time." in second.text and "and the southern depot?" in second.text
    # The dump's tool call and its result are replayed as they were (the transcript has neither).
    assert any(m.get("tool_calls") for m in second.json["messages"] if m["role"] == "assistant")
    assert any(m["role"] == "tool" and "depot: north" in json.dumps(m) for m in second.json["messages"])
    # A turn that did not compact leaves the kept history as it was.
    assert CompactedHistory.objects.get(conversation=conversation).run_id == first.pk

    fake_openai.queue(Reply.text("Yes, the northern one."))
    turn(owner, agent, version, conversation, "so just one depot?")
    third = fake_openai.chat_requests[-1]
    assert FIRST_SUMMARY in third.text and "row 0: shipment 0" not in third.text
    # The turns after the dump follow it as text, in order, before this one's prompt.
    roles = [(m["role"], m.get("content")) for m in third.json["messages"] if m["role"] in ("user", "assistant")]
    assert roles[-3:] == [("user", "and the southern depot?"), ("assistant", "None went south."),
                          ("user", "so just one depot?")]


def test_the_next_compaction_replaces_the_kept_history(org, owner, fake_openai):
    agent, version = compacting_agent(org, owner, fake_openai)
    conversation = new_conversation(org, owner, agent)
    compacting_replies(fake_openai, FIRST_SUMMARY, "All 150 shipments arrived on time.")
    turn(owner, agent, version, conversation, "did every shipment arrive?")
    compacting_replies(fake_openai, SECOND_SUMMARY, "40 crates went south.")
    second = turn(owner, agent, version, conversation, "read it again for the south")
    # Its first request replayed the first dump; its history was compacted again.
    assert FIRST_SUMMARY in fake_openai.chat_requests[-5].text

    kept = CompactedHistory.objects.get(conversation=conversation)
    assert kept.run_id == second.pk and kept.through_message_id == answer_id(second)
    assert SECOND_SUMMARY in json.dumps(kept.messages) and FIRST_SUMMARY not in json.dumps(kept.messages)

    fake_openai.queue(Reply.text("Forty."))
    turn(owner, agent, version, conversation, "how many crates?")
    last = fake_openai.chat_requests[-1]
    assert SECOND_SUMMARY in last.text and FIRST_SUMMARY not in last.text and "row 0: shipment 0" not in last.text
    assert "40 crates went south." in last.text


@pytest.mark.parametrize("config", [
    {"strategy": "sliding_window", **WINDOW},
    {"strategy": "clear_tool_results", "keep_tool_pairs": 0, **WINDOW},
    {"strategy": "tiered", "keep_tool_pairs": 0, **WINDOW},
])
def test_every_strategy_that_changes_the_history_keeps_it(org, owner, fake_openai, config):
    agent, version = compacting_agent(org, owner, fake_openai, compaction=config)
    conversation = new_conversation(org, owner, agent)
    fake_openai.queue(Reply.tool_call("read_memory", {"name": "ledger.md"}),
                      Reply.tool_call("read_memory", {"name": "small.md"}),
                      Reply.text("All arrived."))
    run = turn(owner, agent, version, conversation, "did every shipment arrive?")
    assert len(fake_openai.chat_requests) == 3  # none of these writes a summary
    kept = CompactedHistory.objects.get(conversation=conversation)
    assert kept.run_id == run.pk and kept.through_message_id == answer_id(run)
    if config["strategy"] != "sliding_window":
        assert "row 149" not in json.dumps(kept.messages)  # the old result cleared, as the model last saw it


def test_a_run_that_compacted_before_it_parked_keeps_its_history_when_it_completes(
        org, owner, admin_user, api_as, fake_openai):
    from agents import services
    from governance.models import Approval
    from tests.runner.test_execute import CHART_ARGS

    agent, _ = compacting_agent(org, owner, fake_openai)
    actor = actor_of(owner, org)
    gated = {**agent.draft_spec, "capabilities": [*agent.draft_spec["capabilities"],
                                                  {"id": "charts", "tool_approval": {"create_chart": "required"}}]}
    services.update_agent(actor=actor, agent=agent, spec=gated)
    version = services.publish_agent(actor=actor, agent=agent)
    conversation = new_conversation(org, owner, agent)
    fake_openai.queue(Reply.tool_call("read_memory", {"name": "ledger.md"}),
                      Reply.text("SUMMARY: the person asked about the shipments."),
                      Reply.tool_call("read_memory", {"name": "small.md"}),
                      Reply.text(FIRST_SUMMARY),
                      Reply.tool_call("create_chart", CHART_ARGS))
    run = start_run(agent=agent, version=version, surface="web", prompt="chart the shipments", user=owner,
                    acting_role="owner", conversation=conversation, enqueue=False)
    run_now(run)
    run.refresh_from_db()
    assert run.status == RunStatus.AWAITING_APPROVAL, run.error
    assert not CompactedHistory.objects.exists()  # a parked history ends in unanswered calls: never replayed

    client = api_as(admin_user, org)
    approval = Approval.objects.get(run=run)
    assert client.post(f"/api/v1/approvals/{approval.pk}", {"decision": "approve"}, format="json").status_code == 200
    assert client.post(f"/api/v1/runs/{run.pk}/resume").status_code == 202
    fake_openai.queue(Reply.text("Charted all 150."))
    run_now(run)
    run.refresh_from_db()
    assert run.status == RunStatus.COMPLETED, run.error
    kept = CompactedHistory.objects.get(conversation=conversation)
    assert kept.run_id == run.pk and kept.through_message_id == max(
        Message.objects.filter(run=run).values_list("id", flat=True))
    assert FIRST_SUMMARY in json.dumps(kept.messages) and "Charted all 150." in json.dumps(kept.messages)


def test_an_older_run_never_puts_back_a_history_a_later_summary_replaced(org, owner, fake_openai):
    agent, version = compacting_agent(org, owner, fake_openai)
    conversation = new_conversation(org, owner, agent)
    compacting_replies(fake_openai, FIRST_SUMMARY, "All 150 shipments arrived on time.")
    first = turn(owner, agent, version, conversation, "did every shipment arrive?")
    compacting_replies(fake_openai, SECOND_SUMMARY, "40 crates went south.")
    second = turn(owner, agent, version, conversation, "read it again for the south")
    stale = ModelMessagesTypeAdapter.validate_python(CompactedHistory.objects.get().messages)
    persisted.keep(first, stale, through_message_id=answer_id(first), threshold_bytes=None)
    assert CompactedHistory.objects.get().run_id == second.pk


def test_media_keeps_the_dumps_large_parts_in_storage_and_every_replay_restores_them_even_unbound(
        org, owner, fake_openai):
    from agents import services

    agent, version = compacting_agent(org, owner, fake_openai, media=True)
    conversation = new_conversation(org, owner, agent)
    compacting_replies(fake_openai, FIRST_SUMMARY, "All 150 shipments arrived on time.")
    turn(owner, agent, version, conversation, "did every shipment in this photo arrive?", attachments=[attached()])
    original = sent_images(fake_openai.chat_requests[0])
    assert original == [f"data:image/png;base64,{base64.b64encode(IMAGE).decode()}"]

    kept = CompactedHistory.objects.get(conversation=conversation)
    stored = json.dumps(kept.messages)
    assert kept.media and URI in stored  # the first person's message, with its photo, survives the summary
    assert base64.b64encode(IMAGE).decode() not in stored and base64.urlsafe_b64encode(IMAGE).decode() not in stored
    path = f"media/{org.pk}/{conversation.pk}/{DIGEST}"
    with default_storage.open(path, "rb") as handle:
        assert handle.read() == IMAGE

    fake_openai.queue(Reply.text("The photo shows the northern depot."))
    turn(owner, agent, version, conversation, "which depot is in the photo?")
    assert sent_images(fake_openai.chat_requests[-1]) == original
    assert "media+sha256://" not in fake_openai.chat_requests[-1].text

    actor = actor_of(owner, org)
    unbound = {**agent.draft_spec, "capabilities": [b for b in agent.draft_spec["capabilities"] if b["id"] != "media"]}
    services.update_agent(actor=actor, agent=agent, spec=unbound)
    without_media = services.publish_agent(actor=actor, agent=agent)
    fake_openai.queue(Reply.text("Still the northern depot."))
    turn(owner, agent, without_media, conversation, "and now?")
    assert sent_images(fake_openai.chat_requests[-1]) == original
    assert "media+sha256://" not in fake_openai.chat_requests[-1].text


def test_a_blob_that_cannot_be_read_back_is_logged_and_the_history_still_replays(org, owner, fake_openai, caplog):
    agent, version = compacting_agent(org, owner, fake_openai, media=True)
    conversation = new_conversation(org, owner, agent)
    compacting_replies(fake_openai, FIRST_SUMMARY, "All 150 shipments arrived on time.")
    turn(owner, agent, version, conversation, "did every shipment in this photo arrive?", attachments=[attached()])
    default_storage.delete(f"media/{org.pk}/{conversation.pk}/{DIGEST}")
    fake_openai.queue(Reply.text("I can no longer see the photo."))
    with caplog.at_level(logging.WARNING, logger="capabilities.media.history"):
        turn(owner, agent, version, conversation, "which depot is in the photo?")
    assert "could not be read back" in caplog.text
    request = fake_openai.chat_requests[-1]
    assert FIRST_SUMMARY in request.text and media_history.UNREADABLE in request.text
    assert sent_images(request) == [] and "media+sha256://" not in request.text


def test_a_store_that_fails_keeps_the_dump_inline_and_the_next_turn_still_replays_it(
        org, owner, fake_openai, monkeypatch, caplog):
    def broken(self, data):
        raise OSError("disk full")

    monkeypatch.setattr(OrganizationMediaStore, "put_sync", broken)
    agent, version = compacting_agent(org, owner, fake_openai, media=True)
    conversation = new_conversation(org, owner, agent)
    compacting_replies(fake_openai, FIRST_SUMMARY, "All 150 shipments arrived on time.")
    with caplog.at_level(logging.WARNING, logger="capabilities.media.history"):
        turn(owner, agent, version, conversation, "did every shipment in this photo arrive?",
             attachments=[attached()])
    assert "kept inline" in caplog.text
    kept = CompactedHistory.objects.get(conversation=conversation)
    assert not kept.media and URI not in json.dumps(kept.messages)
    inline = json.dumps(kept.messages)  # the summary was paid for: kept whole, base64 included
    assert base64.b64encode(IMAGE).decode() in inline or base64.urlsafe_b64encode(IMAGE).decode() in inline
    fake_openai.queue(Reply.text("The northern depot."))
    turn(owner, agent, version, conversation, "which depot is in the photo?")
    assert FIRST_SUMMARY in fake_openai.chat_requests[-1].text
    assert sent_images(fake_openai.chat_requests[-1]) == sent_images(fake_openai.chat_requests[0])


def test_an_outsider_organization_holding_the_digest_gets_nothing(org, owner, outsider_org, outsider, fake_openai):
    agent, version = compacting_agent(org, owner, fake_openai, media=True)
    conversation = new_conversation(org, owner, agent)
    compacting_replies(fake_openai, FIRST_SUMMARY, "All 150 shipments arrived on time.")
    first = turn(owner, agent, version, conversation, "did every shipment in this photo arrive?",
                 attachments=[attached()])
    kept = CompactedHistory.objects.get(conversation=conversation)

    # The outsider holds the same bytes (so the same digest) in a folder named like our conversation.
    theirs = OrganizationMediaStore(outsider_org.pk, str(conversation.pk))
    assert theirs.put_sync(IMAGE) == URI
    # A run of theirs naming our conversation finds no kept history, nor its mark in the history's read.
    hostile = Run(pk=first.pk, organization_id=outsider_org.pk, conversation_id=conversation.pk)
    assert persisted.replayed(hostile) is None
    assert not Message.objects.annotate(t=persisted.through_annotation(hostile)).filter(
        conversation=conversation, t__isnull=False).exists()
    # Our dump, restored for them, reads their folder, never ours: with our blob gone from theirs, the line.
    default_storage.delete(f"media/{outsider_org.pk}/{conversation.pk}/{DIGEST}")
    restored = media_history.restore(kept.messages, organization_id=outsider_org.pk,
                                     conversation_id=conversation.pk, run_id=first.pk)
    leaked = json.dumps(restored)
    assert media_history.UNREADABLE in leaked
    assert base64.b64encode(IMAGE).decode() not in leaked and base64.urlsafe_b64encode(IMAGE).decode() not in leaked
    # And ours, with their copy there and ours deleted, never gets their bytes.
    theirs.put_sync(IMAGE)
    default_storage.delete(f"media/{org.pk}/{conversation.pk}/{DIGEST}")
    again = persisted.replayed(first)
    assert again is not None and media_history.UNREADABLE in json.dumps(
        ModelMessagesTypeAdapter.dump_python(again[1], mode="json"))


def test_deleting_the_conversation_removes_the_kept_history_and_its_media(org, owner, outsider_org, fake_openai,
                                                                          monkeypatch):
    from agents.chat import delete_conversation
    from governance import retention

    # The removal task is run below, by hand: the session's worker running the queued one beside it would hold the
    # row (two sweepers skip each other's rows) and this test would look before it had deleted the file.
    monkeypatch.setattr(retention, "_kick", lambda: None)

    agent, version = compacting_agent(org, owner, fake_openai, media=True)
    conversation = new_conversation(org, owner, agent)
    kept = new_conversation(org, owner, agent)
    for each in (conversation, kept):
        compacting_replies(fake_openai, FIRST_SUMMARY, "All 150 shipments arrived on time.")
        turn(owner, agent, version, each, "did every shipment in this photo arrive?", attachments=[attached()])
    OrganizationMediaStore(outsider_org.pk, str(conversation.pk)).put_sync(IMAGE)
    assert CompactedHistory.objects.count() == 2

    delete_conversation(actor=actor_of(owner, org), conversation_id=conversation.pk)
    assert list(CompactedHistory.objects.values_list("conversation_id", flat=True)) == [kept.pk]
    assert f"media/{org.pk}/{conversation.pk}/{DIGEST}" in set(PendingFileRemoval.objects.values_list("path", flat=True)) \
        or not default_storage.exists(f"media/{org.pk}/{conversation.pk}/{DIGEST}")
    retention.remove_pending_files()
    assert not default_storage.exists(f"media/{org.pk}/{conversation.pk}/{DIGEST}")
    assert default_storage.exists(f"media/{org.pk}/{kept.pk}/{DIGEST}")
    assert default_storage.exists(f"media/{outsider_org.pk}/{conversation.pk}/{DIGEST}")


def test_a_cascade_from_the_agent_removes_the_kept_history_too(org, owner, fake_openai):
    agent, version = compacting_agent(org, owner, fake_openai)
    conversation = new_conversation(org, owner, agent)
    compacting_replies(fake_openai, FIRST_SUMMARY, "All 150 shipments arrived on time.")
    turn(owner, agent, version, conversation, "did every shipment arrive?")
    with transaction.atomic():
        Conversation.objects.filter(pk=conversation.pk).delete()
    assert not CompactedHistory.objects.exists()


def test_a_kept_history_past_the_transcript_period_is_swept_and_one_whose_turns_were_swept_is_not_replayed(
        org, owner, outsider_org, fake_openai):
    agent, version = compacting_agent(org, owner, fake_openai)
    conversation = new_conversation(org, owner, agent)
    compacting_replies(fake_openai, FIRST_SUMMARY, "All 150 shipments arrived on time.")
    turn(owner, agent, version, conversation, "did every shipment arrive?")
    kept = CompactedHistory.objects.get()

    # Its covered turns swept by retention: the next turn reads the transcript, not the dump.
    Message.objects.filter(pk=kept.through_message_id).delete()
    fake_openai.queue(Reply.text("I do not remember."))
    turn(owner, agent, version, conversation, "what did we find?")
    assert FIRST_SUMMARY not in fake_openai.chat_requests[-1].text

    # Through the retention policy, as governance.retention's transcript sweeps select: an organization keeping
    # transcripts for 30 days loses a dump last written 40 days ago; one keeping them for 60 does not.
    from governance import retention
    from governance.models import RetentionPolicy

    RetentionPolicy.objects.create(organization=org, transcript_days=60)
    CompactedHistory.objects.update(updated_at=timezone.now() - timedelta(days=40))
    assert retention._by_policy("compacted_histories", "transcript_days", "organization", None,
                                persisted.sweep_expired) == 0
    RetentionPolicy.objects.filter(organization=org).update(transcript_days=30)
    assert persisted.sweep_expired(Q(organization=outsider_org), timezone.now()) == 0
    assert retention._by_policy("compacted_histories", "transcript_days", "organization", None,
                                persisted.sweep_expired) == 1
    assert not CompactedHistory.objects.exists()

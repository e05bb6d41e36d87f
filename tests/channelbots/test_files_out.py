"""Files out of a channel reply, and who shares a workspace through a binding.

What the agent wrote in its workspace this turn goes to the thread with the answer — not the person's own
uploads, not materialized skills, not a file it only overwrote — at most 3 files of 8 MB with the type their
name implies; the rest are named in the answer. A binding's workspace scope overrides the agent's."""

from __future__ import annotations

import json

import pytest
from pydantic_ai.messages import ModelRequest, ToolReturnPart, UserPromptPart
from pydantic_ai.models.function import AgentInfo, DeltaToolCall, FunctionModel

from agents.models import Run
from channelbots import files_out
from channelbots.platforms import client_for
from tests import factories
from tests.channelbots.conftest import bind, slack_bot, wait_until
from tests.channelbots.test_telegram import telegram_bot
from tests.fakes.slack_api import SlackEventSender
from tests.fakes.telegram_api import fake_telegram  # noqa: F401  (fixture)
from workspaces import store
from workspaces.models import Workspace, WorkspaceFile

SIGNING = "8f742231b10e8888abcd99yyyzzz85a5"


def prompt_driven_model() -> FunctionModel:
    """`write NAME TEXT` writes a file, `overwrite NAME TEXT` too, `read NAME` reads one; then it answers
    with what the tool said."""

    async def stream(messages, info: AgentInfo):
        last = messages[-1]
        returned = [p for p in last.parts if isinstance(p, ToolReturnPart)] if isinstance(last, ModelRequest) else []
        if returned:
            yield "Tool said: " + str(returned[-1].content)
            return
        prompt = [str(p.content) for m in messages if isinstance(m, ModelRequest) for p in m.parts
                  if isinstance(p, UserPromptPart)][-1]  # this turn's, not the thread's first
        words = prompt.split()
        verb = next((w for w in words if w in ("write", "read", "overwrite")), None)
        if verb is None:
            yield "Nothing to do."
            return
        at = words.index(verb)
        if verb == "read":
            call = ("read_file", {"path": words[at + 1]})
        else:
            call = ("write_file", {"path": words[at + 1], "content": " ".join(words[at + 2:]) + "\n"})
        yield {0: DeltaToolCall(name=call[0], json_args=json.dumps(call[1]), tool_call_id="c1")}

    return FunctionModel(stream_function=stream, model_name="scripted")


@pytest.fixture
def sandbox_agent(org, builder):
    return factories.published_agent(org, builder, name="Files", capabilities=[{"id": "sandbox"}])


def test_a_file_written_this_turn_is_uploaded_to_the_thread_an_overwritten_one_is_not(
        celery_worker, scripted_model, client, org, builder, sandbox_agent, fake_slack):
    bot = slack_bot(org, builder, fake=fake_slack)
    bind(sandbox_agent, bot, builder, org, workspace_scope="channel")
    sender = SlackEventSender(client, str(bot.pk), SIGNING)
    scripted_model(prompt_driven_model())

    first = sender.message("<@UBOT> write report.csv month,total March,12", channel="C1")
    sender.send(first)
    wait_until(lambda: fake_slack.called("files.completeUploadExternal"))
    complete = fake_slack.called("files.completeUploadExternal")[0]
    assert complete["channel_id"] == "C1" and complete["thread_ts"] == first["ts"]
    assert fake_slack.called("files.getUploadURLExternal")[0]["filename"] == "report.csv"
    assert fake_slack.uploads[0]["bytes"] == b"month,total March,12\n"
    wait_until(lambda: any("Tool said" in p.final for p in fake_slack.answers("C1")))

    # Another thread of the same channel shares the workspace (the binding says channel): it overwrites the
    # file, which is not posted again.
    second = sender.message("<@UBOT> overwrite report.csv month,total April,14", channel="C1")
    sender.send(second)
    wait_until(lambda: Run.objects.filter(status="completed").count() == 2)
    wait_until(lambda: sum("Tool said" in p.final for p in fake_slack.answers("C1")) == 2)
    assert len(fake_slack.called("files.completeUploadExternal")) == 1
    workspace = Workspace.objects.get()
    assert (workspace.scope, workspace.key) == ("channel", f"slack:{bot.pk}:C1")
    assert bytes(WorkspaceFile.objects.get(path="/workspace/report.csv").data) == b"month,total April,14\n"


def test_without_the_override_each_thread_has_its_own_workspace(celery_worker, scripted_model, client, org, builder,
                                                                  sandbox_agent, fake_slack):
    bot = slack_bot(org, builder, fake=fake_slack)
    bind(sandbox_agent, bot, builder, org)
    sender = SlackEventSender(client, str(bot.pk), SIGNING)
    scripted_model(prompt_driven_model())
    sender.send(sender.message("<@UBOT> write plan.md ship friday", channel="C1"))
    wait_until(lambda: Run.objects.filter(status="completed").count() == 1)
    question = sender.message("<@UBOT> read plan.md", channel="C1")
    sender.send(question)
    answer = wait_until(lambda: next((p.final for p in fake_slack.answers("C1")
                                      if p.thread_ts == question["ts"] and "Tool said" in p.final), None))
    assert "ship friday" not in answer and "plan.md" in answer
    assert Workspace.objects.filter(scope="conversation").count() == 2


@pytest.mark.django_db
def test_three_files_go_out_with_their_types_and_the_rest_are_named(org, builder, sandbox_agent, fake_telegram):
    version = sandbox_agent.versions.first()
    run = Run.objects.create(organization=org, agent=sandbox_agent, version=version, user=builder, surface="telegram",
                             status="completed")
    earlier = Run.objects.create(organization=org, agent=sandbox_agent, version=version, user=builder,
                                 surface="telegram", status="completed")
    workspace = Workspace.objects.create(organization=org, agent=sandbox_agent, scope="agent", key="")
    store.write(workspace.pk, "/workspace/old.md", b"before", run_id=str(earlier.pk))
    store.write(workspace.pk, "/workspace/old.md", b"overwritten now", run_id=str(run.pk))
    store.write(workspace.pk, "/workspace/uploads/mine.pdf", b"%PDF", run_id=str(run.pk))
    store.write(workspace.pk, "/workspace/skills/refunds/SKILL.md", b"---", run_id=str(run.pk))
    for name in ("a.csv", "b.png", "huge.bin", "c.md", "d.txt"):
        data = b"x" * (9 * 1024 * 1024) if name == "huge.bin" else name.encode()
        store.write(workspace.pk, f"/workspace/{name}", data, run_id=str(run.pk))

    bot = telegram_bot(org, builder, fake_telegram)
    notes = files_out.deliver(client_for(bot), "-100", "55", run.pk)

    assert [(m["method"], m["name"], m["mime"], m["reply_to"]) for m in fake_telegram.media] == [
        ("sendDocument", "a.csv", "text/csv", "55"),
        ("sendPhoto", "b.png", "image/png", "55"),
        ("sendDocument", "c.md", "text/markdown", "55"),
    ]
    assert notes == ["Also in the workspace, not attached here: /workspace/huge.bin (9.0 MB, over the 8 MB limit); "
                     "/workspace/d.txt."]


@pytest.mark.django_db
def test_user_scope_keeps_an_unlinked_chat_sender_out_of_the_binding_creators_files(org, builder, sandbox_agent):
    version = sandbox_agent.versions.first()
    channel = {"bot_id": "b1", "chat_id": "C1", "platform": "slack"}
    unlinked = Run(organization=org, agent=sandbox_agent, version=version, user=builder, surface="slack",
                   chat_account="U9@T1", options={"channel": {**channel, "linked": False}})
    linked = Run(organization=org, agent=sandbox_agent, version=version, user=builder, surface="slack",
                 options={"channel": {**channel, "linked": True}})
    web = Run(organization=org, agent=sandbox_agent, version=version, user=builder, surface="web")
    assert store.placement(unlinked, "user").key == "chat:slack:U9@T1"
    assert store.placement(linked, "user").key == store.placement(web, "user").key == f"user:{builder.pk}"
    assert store.placement(web, "channel").scope == "run"  # no channel and no conversation: this turn only


def test_a_near_limit_footer_speaks_when_the_workspace_passes_80_percent(
        celery_worker, scripted_model, client, org, builder, sandbox_agent, fake_slack, settings):
    settings.SANDBOX_STATE_MAX_BYTES = 1024
    bot = slack_bot(org, builder, fake=fake_slack)
    bind(sandbox_agent, bot, builder, org)  # footer_mode defaults to near_limit
    sender = SlackEventSender(client, str(bot.pk), SIGNING)
    scripted_model(prompt_driven_model())
    first = sender.message("<@UBOT> write small.txt " + "a" * 100, channel="C1")
    sender.send(first)
    quiet = wait_until(lambda: next((p.final for p in fake_slack.answers("C1") if "Tool said" in p.final), None))
    assert "full" not in quiet  # 10%: nothing to say
    second = sender.message("<@UBOT> write big.txt " + "b" * 800, channel="C1", thread_ts=first["ts"])
    sender.send(second)
    wait_until(lambda: Run.objects.filter(status__in=["completed", "failed"]).count() == 2)
    wait_until(lambda: sum("Tool said" in p.final for p in fake_slack.answers("C1")) == 2)
    loud = [p.final for p in fake_slack.answers("C1")][-1]
    assert "the workspace is 88% full" in loud


def test_send_channel_file_posts_a_workspace_file_and_it_is_not_posted_twice(
        celery_worker, scripted_model, client, org, builder, fake_slack):
    """The agent writes a file and sends it itself (channel_tools granted on the binding): one upload."""
    agent = factories.published_agent(org, builder, name="Sender", capabilities=[{"id": "sandbox"}])
    bot = slack_bot(org, builder, fake=fake_slack)
    bind(agent, bot, builder, org, channel_tools=["send_channel_file"])
    sender = SlackEventSender(client, str(bot.pk), SIGNING)
    calls = iter([("write_file", {"path": "summary.md", "content": "# Summary\n"}),
                  ("send_channel_file", {"path": "summary.md"}),
                  ("send_channel_file", {"path": "missing.md"})])

    async def stream(messages, info: AgentInfo):
        call = next(calls, None)
        if call is None:
            yield "Sent it."
            return
        yield {0: DeltaToolCall(name=call[0], json_args=json.dumps(call[1]), tool_call_id=f"c-{call[1]['path']}"
                                + call[0])}

    scripted_model(FunctionModel(stream_function=stream, model_name="scripted"))
    sender.send(sender.message("<@UBOT> send me the summary", channel="C1"))
    wait_until(lambda: any(p.final.startswith("Sent it.") for p in fake_slack.answers("C1")))
    assert [c["filename"] for c in fake_slack.called("files.getUploadURLExternal")] == ["summary.md"]
    assert fake_slack.uploads[0]["bytes"] == b"# Summary\n"
    from agents.models import ToolCall

    missing = ToolCall.objects.get(args__path="missing.md")
    assert "There is no file at 'missing.md'" in str(missing.result)

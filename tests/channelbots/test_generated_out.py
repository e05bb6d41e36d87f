"""A reply's generated files (images, speech, video the run made, outside any workspace) follow the answer into
the chat thread: `channelbots.router.finish` posts them with `channelbots.generated_files.deliver`."""

from __future__ import annotations

import pytest
from asgiref.sync import sync_to_async
from pydantic_ai.models.function import AgentInfo, FunctionModel

from agents.models import Run, RunStatus
from media import store
from tests import factories
from tests.channelbots.conftest import bind, slack_bot, wait_until
from tests.fakes.slack_api import SlackEventSender
from tests.fakes.tts_server import mp3_of


@pytest.fixture(autouse=True)
def _media_root(settings, tmp_path):
    settings.MEDIA_ROOT = str(tmp_path / "media")


def speaking_model() -> FunctionModel:
    """Stands in for a turn whose tool made a clip: the running run gets a stored speech file, then the answer."""

    def make_clip() -> None:
        run = Run.objects.get(status=RunStatus.RUNNING)
        store.save(organization_id=run.organization_id, run_id=run.pk, conversation_id=run.conversation_id,
                   kind="speech", data=mp3_of("Good morning"), media_type="audio/mpeg", name="speech-good-morning")

    async def stream(messages, info: AgentInfo):
        await sync_to_async(make_clip)()
        yield "Here is the greeting."

    return FunctionModel(stream_function=stream, model_name="scripted")


def test_a_clip_made_in_a_slack_turn_is_uploaded_in_the_answer_thread(celery_worker, scripted_model, client, org,
                                                                      builder, fake_slack):
    agent = factories.published_agent(org, builder, name="Announcer")
    bot = slack_bot(org, builder, fake=fake_slack)
    bind(agent, bot, builder, org)
    sender = SlackEventSender(client, str(bot.pk), "8f742231b10e8888abcd99yyyzzz85a5")
    scripted_model(speaking_model())
    event = sender.message("<@UBOT> say good morning", channel="C1")
    assert sender.send(event).status_code == 200
    wait_until(lambda: fake_slack.called("files.completeUploadExternal"))
    complete = fake_slack.called("files.completeUploadExternal")[0]
    assert complete["channel_id"] == "C1" and complete["thread_ts"] == event["ts"]
    assert [c["filename"] for c in fake_slack.called("files.getUploadURLExternal")] == ["speech-good-morning.mp3"]
    assert fake_slack.uploads[0]["bytes"] == mp3_of("Good morning")
    # The file goes up while the answer's placeholder ("…") is still being edited into its final text.
    wait_until(lambda: [p.final for p in fake_slack.answers("C1")] == ["Here is the greeting."])

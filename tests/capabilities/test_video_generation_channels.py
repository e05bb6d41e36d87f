"""Generated files reach a chat thread: the speech and video clips (and images) a run made are uploaded to the
fake Slack with their stored bytes, name and type — the way `channelbots.router.finish` posts a reply's files
(`channelbots.generated_files.deliver`, beside `files_out.deliver`). A file already in the run's workspace is left
to `files_out`; what is over the limit is named, not sent; another run's files are never posted."""

from __future__ import annotations

import pytest

from agents.models import RunStatus
from channelbots import generated_files as channels
from channelbots.platforms import client_for
from media import store
from tests import factories
from tests.channelbots.conftest import slack_bot
from tests.fakes.slack_api import fake_slack  # noqa: F401  (fixture)
from tests.fakes.tts_server import mp3_of
from tests.fakes.video_server import SMALL_MP4
from tests.governance.helpers import conversation, run_in

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _media_root(settings, tmp_path):
    settings.MEDIA_ROOT = str(tmp_path / "media")
    settings.CHANNEL_ALLOWED_PRIVATE_HOSTS = ["127.0.0.1"]  # the fake Slack listens there


def made(the_run, kind: str, data: bytes, media_type: str, name: str, **extra):
    return store.save(organization_id=the_run.organization_id, run_id=the_run.pk,
                      conversation_id=the_run.conversation_id, kind=kind, data=data, media_type=media_type,
                      name=name, **extra)


def test_a_runs_speech_and_video_clips_are_uploaded_to_the_thread(org, owner, fake_slack):
    agent = factories.published_agent(org, owner)
    chat = conversation(agent, owner)
    the_run, other_run = run_in(chat, status=RunStatus.RUNNING), run_in(chat)
    made(the_run, "speech", mp3_of("Hello team"), "audio/mpeg", "speech-hello-team")
    made(the_run, "video", SMALL_MP4, "video/mp4", "video-waves")
    made(other_run, "video", SMALL_MP4, "video/mp4", "video-of-another-run")
    bot = slack_bot(org, owner, fake=fake_slack)

    notes = channels.deliver(client_for(bot), "C1", "1700000000.000100", the_run.pk)

    assert notes == []
    names = [call["filename"] for call in fake_slack.called("files.getUploadURLExternal")]
    assert names == ["speech-hello-team.mp3", "video-waves.mp4"]
    assert [upload["bytes"] for upload in fake_slack.uploads] == [mp3_of("Hello team"), SMALL_MP4]
    complete = fake_slack.called("files.completeUploadExternal")
    assert {(c["channel_id"], c["thread_ts"]) for c in complete} == {("C1", "1700000000.000100")}


def test_files_in_the_workspace_are_left_to_files_out_and_the_rest_past_three_are_named(org, owner, fake_slack):
    agent = factories.published_agent(org, owner)
    the_run = run_in(conversation(agent, owner), status=RunStatus.RUNNING)
    for n in range(4):
        made(the_run, "speech", mp3_of(f"clip {n}"), "audio/mpeg", f"clip-{n}")
    landed = made(the_run, "video", SMALL_MP4, "video/mp4", "in-workspace")
    type(landed).objects.filter(pk=landed.pk).update(workspace_path="/workspace/output/in-workspace.mp4")
    bot = slack_bot(org, owner, fake=fake_slack)

    notes = channels.deliver(client_for(bot), "C1", "", the_run.pk)

    assert [c["filename"] for c in fake_slack.called("files.getUploadURLExternal")] == [
        "clip-0.mp3", "clip-1.mp3", "clip-2.mp3"]
    assert notes == ["Also made, not attached here (open them in the web console): clip-3.mp3."]

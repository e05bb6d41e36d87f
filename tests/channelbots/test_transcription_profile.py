"""Which key pays for a voice note is the organization's choice, never a query's first row (issue 46 §4): the
bot names a model profile, or the organization has exactly one for the provider (a Speech-to-text one counts
before the others); with several and none named the note is refused with what to do, and nothing is sent."""

from __future__ import annotations

import pytest

from agents.models import ModelProfile
from channelbots import transcription
from channelbots.models import ChannelBot
from tests import factories
from tests.channelbots.conftest import slack_bot
from tests.fakes.openai_server import Reply, fake_openai  # noqa: F401  (fixture)

pytestmark = pytest.mark.django_db

AUDIO = b"OggS fake audio bytes"
FIRST_KEY, SECOND_KEY = "sk-first-openai-key-0123456789", "sk-second-openai-key-0123456789"


@pytest.fixture
def listed(settings):
    settings.MODEL_ALLOWED_PRIVATE_HOSTS = ["127.0.0.1"]  # the fake provider listens there


def _profile(org, key: str, base_url: str, **extra) -> ModelProfile:
    return factories.model_profile(org, "openai", "gpt-4o", api_key=key, base_url=base_url, **extra)


def _bot(org, **extra) -> ChannelBot:
    return ChannelBot.objects.create(organization=org, platform="telegram", name="Tg", stt_provider="openai",
                                     stt_model="whisper-1", **extra)


def test_with_two_keys_and_none_named_the_note_is_refused_and_nothing_is_sent(org, fake_openai, listed):
    _profile(org, FIRST_KEY, fake_openai.base_url, label="A")
    _profile(org, SECOND_KEY, fake_openai.base_url, label="B")
    with pytest.raises(transcription.TranscriptionFailed, match="several openai keys.*bot's settings"):
        transcription.transcribe(_bot(org), AUDIO)
    assert fake_openai.requests == []


def test_the_named_profile_pays_even_when_it_is_not_the_first(org, fake_openai, listed):
    _profile(org, FIRST_KEY, fake_openai.base_url, label="A")
    second = _profile(org, SECOND_KEY, fake_openai.base_url, label="B")
    fake_openai.queue(Reply.text("hello there"), route="transcriptions")
    assert transcription.transcribe(_bot(org, stt_profile=second), AUDIO) == "hello there"
    (request,) = fake_openai.requests_to("transcriptions")
    assert request.bearer == SECOND_KEY


def test_a_speech_to_text_profile_is_chosen_before_chat_profiles(org, fake_openai, listed):
    _profile(org, FIRST_KEY, fake_openai.base_url, label="A chat")
    _profile(org, SECOND_KEY, fake_openai.base_url, label="B speech", kind=ModelProfile.Kind.TRANSCRIPTION)
    fake_openai.queue(Reply.text("hi"), route="transcriptions")
    transcription.transcribe(_bot(org), AUDIO)
    assert fake_openai.requests_to("transcriptions")[0].bearer == SECOND_KEY


def test_a_named_profile_that_lost_its_key_refuses_instead_of_falling_back(org, fake_openai, listed):
    first = _profile(org, FIRST_KEY, fake_openai.base_url, label="A")
    _profile(org, SECOND_KEY, fake_openai.base_url, label="B")
    bot = _bot(org, stt_profile=first)
    ModelProfile.objects.filter(pk=first.pk).update(secret=None)
    with pytest.raises(transcription.TranscriptionFailed, match="no longer has a openai key"):
        transcription.transcribe(bot, AUDIO)
    assert fake_openai.requests == []


def test_the_api_takes_a_profile_of_this_organization_with_a_key_for_the_provider(api_as, org, builder):
    bot = slack_bot(org, builder)
    client = api_as(builder, org)
    mine = _profile(org, FIRST_KEY, "")
    keyless = factories.model_profile(org, "openai", "gpt-4o")
    groq = factories.model_profile(org, "openai_compatible", "llama", api_key=SECOND_KEY,
                                   base_url="https://api.groq.com/openai/v1")
    other_org = factories.organization()
    theirs = _profile(other_org, SECOND_KEY, "")
    for refused in (theirs, keyless, groq, "not-a-uuid"):
        response = client.patch(f"/api/v1/bots/{bot.pk}", {"stt_provider": "openai", "stt_model": "whisper-1",
                                                           "stt_profile_id": str(getattr(refused, "pk", refused))},
                                format="json")
        assert response.status_code == 422, (refused, response.content)
        assert response.json()["error"]["details"]["field"] == "stt_profile_id"
    assert ChannelBot.objects.get(pk=bot.pk).stt_profile_id is None
    response = client.patch(f"/api/v1/bots/{bot.pk}", {"stt_provider": "openai", "stt_model": "whisper-1",
                                                       "stt_profile_id": str(mine.pk)}, format="json")
    assert response.status_code == 200 and response.json()["stt_profile_id"] == str(mine.pk)
    # The groq profile serves groq: chosen with groq's model it is accepted.
    response = client.patch(f"/api/v1/bots/{bot.pk}", {"stt_provider": "groq", "stt_model": "whisper-large-v3",
                                                       "stt_profile_id": str(groq.pk)}, format="json")
    assert response.status_code == 200 and response.json()["stt_profile_id"] == str(groq.pk)
    # Switching voice notes off forgets the key; a key without a model is refused.
    response = client.patch(f"/api/v1/bots/{bot.pk}", {"stt_provider": "", "stt_model": "", "stt_profile_id": None},
                            format="json")
    assert response.status_code == 200 and response.json()["stt_profile_id"] is None
    response = client.patch(f"/api/v1/bots/{bot.pk}", {"stt_profile_id": str(mine.pk)}, format="json")
    assert response.status_code == 422 and response.json()["error"]["details"]["field"] == "stt_profile_id"


def test_deleting_the_named_profile_leaves_the_bot_choosing_again(org, fake_openai, listed):
    first = _profile(org, FIRST_KEY, fake_openai.base_url, label="A")
    bot = _bot(org, stt_profile=first)
    first.delete()
    bot.refresh_from_db()
    assert bot.stt_profile_id is None
    with pytest.raises(transcription.TranscriptionFailed, match="no openai key"):
        transcription.transcribe(bot, AUDIO)

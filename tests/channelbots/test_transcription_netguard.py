"""Voice-note transcription goes through the outbound guard (allowance MODEL_ALLOWED_PRIVATE_HOSTS, the model
profiles' own): the provider's address is checked and pinned on every call, so the organization's model key
never reaches a metadata or an unlisted private address, and the person hears it was refused, not where."""

from __future__ import annotations

import logging

import pytest

from channelbots import transcription
from channelbots.models import ChannelBot
from tests import factories
from tests.fakes.openai_server import Reply, fake_openai  # noqa: F401  (fixture)

KEY = "sk-transcription-key-0123456789"
NAME = "stt.example.test"
AUDIO = b"OggS fake audio bytes"


def _bot(org, base_url: str) -> ChannelBot:
    """A bot transcribing with openai's whisper-1, through the organization's openai profile at `base_url`
    (written straight to the database, as one saved before the guard existed would be)."""
    factories.model_profile(org, "openai", "gpt-4o", api_key=KEY, base_url=base_url)
    return ChannelBot.objects.create(organization=org, platform="telegram", name="Tg", stt_provider="openai",
                                     stt_model="whisper-1")


@pytest.mark.django_db
@pytest.mark.parametrize("answer", [["169.254.169.254"], ["93.184.216.34", "fd00:ec2::254"]])
def test_a_name_resolving_to_a_metadata_address_never_gets_the_key(org, fake_openai, settings, dns, caplog, answer):
    settings.MODEL_ALLOWED_PRIVATE_HOSTS = [NAME, "127.0.0.1"]  # even listed: metadata is never reached
    dns[NAME] = answer
    bot = _bot(org, f"http://{NAME}:{fake_openai.port}/v1")
    with caplog.at_level(logging.WARNING, logger="channelbots.transcription"):
        with pytest.raises(transcription.TranscriptionFailed, match="outbound guard refused") as caught:
            transcription.transcribe(bot, AUDIO)
    # The person is told it was refused; the operator's log says why. Neither carries the key.
    assert "169.254" not in str(caught.value) and "fd00" not in str(caught.value)
    assert "metadata" in caplog.text and KEY not in caplog.text + str(caught.value)
    assert fake_openai.requests == []


@pytest.mark.django_db
def test_an_unlisted_private_address_is_refused_and_the_log_names_the_setting(org, fake_openai, settings, caplog):
    settings.MODEL_ALLOWED_PRIVATE_HOSTS = []
    bot = _bot(org, fake_openai.base_url)  # http://127.0.0.1:…/v1
    with caplog.at_level(logging.WARNING, logger="channelbots.transcription"):
        with pytest.raises(transcription.TranscriptionFailed, match="outbound guard refused"):
            transcription.transcribe(bot, AUDIO)
    assert "MODEL_ALLOWED_PRIVATE_HOSTS" in caplog.text
    assert fake_openai.requests == []


@pytest.mark.django_db
def test_a_listed_name_is_reached_at_the_address_the_guard_checked(org, fake_openai, settings, dns):
    """The name resolves only in the guard's table: the upload arrives because it went to the pinned address."""
    settings.MODEL_ALLOWED_PRIVATE_HOSTS = [NAME]
    dns[NAME] = ["127.0.0.1"]
    fake_openai.queue(Reply.text("what is the weather"), route="transcriptions")
    bot = _bot(org, f"http://{NAME}:{fake_openai.port}/v1")
    assert transcription.transcribe(bot, AUDIO) == "what is the weather"
    (request,) = fake_openai.requests_to("transcriptions")
    assert request.bearer == KEY and request.headers["host"] == f"{NAME}:{fake_openai.port}"
    assert request.form is not None and request.form["model"] == "whisper-1"

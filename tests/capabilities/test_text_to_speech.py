"""`generate_speech` (capability text_to_speech) through a real pydantic-ai Agent against a local fake of the
OpenAI, ElevenLabs and Gemini speech APIs: quota first, then the budget asked with the clip's price, then the
provider chunk by chunk (each recorded as it returns), the join, the generated-media store. Each refusal is
proven by what did not happen: the fake heard nothing, the ledger and the store gained nothing."""

from __future__ import annotations

import struct
from datetime import date
from decimal import Decimal

import pytest
from asgiref.sync import sync_to_async
from django.core.files.storage import default_storage
from pydantic import ValidationError

from agents.models import Run, RunStatus
from agents.spec import AgentSpec
from capabilities import registry
from capabilities.text_to_speech import audio, catalog
from capabilities.text_to_speech.capability import CAPABILITY, TextToSpeechConfig
from governance.models import SpendEntry
from media import store
from media.models import GeneratedMedia
from tests import factories
from tests.capabilities.helpers import Script, agent_for, deps, run
from tests.fakes.tts_server import (  # noqa: F401
    MP3_HEAD,
    SECRET_TEXT,
    FakeSpeechServer,
    Speech,
    fake_speech,
    mp3_of,
    pcm_of,
)
from tests.governance.helpers import conversation, run_in

pytestmark = pytest.mark.django_db(transaction=True)

KEY = FakeSpeechServer.api_key
VOICE_ID = "JBFqnCBsd6RMkjVDRZzb"
MILLION = Decimal(1_000_000)


@pytest.fixture(autouse=True)
def _registered(settings, tmp_path):
    settings.MEDIA_ROOT = str(tmp_path / "media")
    added = registry.find(CAPABILITY.id) is None
    if added:
        registry.register(CAPABILITY)
    yield
    if added:
        registry.unregister(CAPABILITY.id)


@pytest.fixture
async def _close_thread_connections():
    yield
    from django.db import connections

    await sync_to_async(connections.close_all)()


@pytest.fixture
def setup(org, owner, _close_thread_connections):
    agent = factories.published_agent(org, owner)
    chat = conversation(agent, owner)
    the_run = run_in(chat, status=RunStatus.RUNNING)
    secret = factories.secret(org, value=KEY)
    return agent, chat, the_run, secret


def spec_with(secret, **config) -> AgentSpec:
    return AgentSpec(name="Narrator", capabilities=[{"id": "text_to_speech", "secret_id": str(secret.pk),
                                                     "config": config}])


def run_deps(the_run):
    return deps(run_id=str(the_run.pk), organization_id=str(the_run.organization_id), agent_id=str(the_run.agent_id),
                conversation_id=str(the_run.conversation_id), surface="web")


async def speak(setup, text: str = "Hello there, this is the weekly update.", args=None, **config):
    _, _, the_run, secret = setup
    return await run(spec_with(secret, **config), [("generate_speech", {"text": text, **(args or {})})],
                     run_deps(the_run))


def stored_bytes(media: GeneratedMedia) -> bytes:
    with default_storage.open(media.path, "rb") as handle:
        return handle.read()


def nothing_happened(fake: FakeSpeechServer) -> None:
    assert fake.requests == []
    assert GeneratedMedia.objects.count() == 0
    assert not SpendEntry.objects.filter(kind="text_to_speech").exists()


def spend_all_but(org, agent, left: str) -> None:
    org.monthly_budget_usd = Decimal("1")
    org.save(update_fields=["monthly_budget_usd"])
    SpendEntry.objects.create(organization=org, agent=agent, cost_usd=Decimal("1") - Decimal(left),
                              kind="model_request")


# ------------------------------------------------------------------ OpenAI


async def test_a_clip_is_spoken_priced_by_the_character_stored_and_returned(setup, fake_speech, org):
    text = "Hello there, this is the weekly update."

    outcome = await speak(setup, text, {"instructions": "Cheerful, quick."})

    [result] = outcome.returns
    media = await sync_to_async(GeneratedMedia.objects.get)()
    assert result == {"url": f"/api/v1/generated/{media.filename}", "media_type": "audio/mpeg",
                      "name": "speech-hello-there-this-is-the-weekly.mp3", "filename": media.filename}
    _, chat, the_run, _ = setup
    assert (media.run_id, media.conversation_id, media.kind, media.provider, media.model) == (
        the_run.pk, chat.pk, "speech", "openai", "gpt-4o-mini-tts")
    assert await sync_to_async(stored_bytes)(media) == mp3_of(text)
    [request] = fake_speech.requests
    assert request.headers["authorization"] == f"Bearer {KEY}"
    assert request.json == {"model": "gpt-4o-mini-tts", "input": text, "voice": "alloy", "response_format": "mp3",
                            "instructions": "Cheerful, quick."}
    entry = await sync_to_async(SpendEntry.objects.get)(kind="text_to_speech")
    assert (entry.run_id, entry.model, entry.is_partial) == (the_run.pk, "openai:gpt-4o-mini-tts", False)
    assert entry.cost_usd == Decimal(15) * len(text) / MILLION
    row = await sync_to_async(Run.objects.get)(pk=the_run.pk)
    assert row.cost_usd == Decimal("0.0125") + entry.cost_usd and row.requests == 0


async def test_a_model_that_reads_no_instructions_is_not_sent_them_nor_offered_the_argument(setup, fake_speech):
    outcome = await speak(setup, args={"voice": "onyx"}, model="tts-1")

    assert outcome.returns[0]["media_type"] == "audio/mpeg"
    [request] = fake_speech.requests
    assert "instructions" not in request.json and request.json["voice"] == "onyx"
    [tool] = outcome.script.requests[0].function_tools
    assert "instructions" not in tool.parameters_json_schema["properties"]


async def test_the_voice_reaches_the_model_as_an_enum_of_the_allowed_voices_with_the_usual_one_first(setup):
    _, _, the_run, secret = setup
    script = Script([])
    config = {"voice": "coral", "voices": [{"id": "onyx", "note": "the narrator"}, {"id": "nova"}]}
    agent = agent_for(spec_with(secret, **config), run_deps(the_run), script)
    await agent.run("go", deps=run_deps(the_run))

    [tool] = script.requests[0].function_tools
    voice = tool.parameters_json_schema["properties"]["voice"]
    assert voice["enum"] == ["coral", "onyx", "nova"] and voice["default"] == "coral"
    assert "onyx: the narrator" in voice["description"] and "nova: Bright and energetic" in voice["description"]


async def test_a_long_text_is_split_at_sentences_spoken_in_order_and_joined_as_one_mp3(setup, fake_speech):
    sentence = "This sentence is part of a long report that goes on. "
    text = (sentence * 160).strip()  # ~8,600 characters: three requests at OpenAI's 4,096

    outcome = await speak(setup, text, max_characters=10_000)

    parts = [r.text for r in fake_speech.requests]
    assert len(parts) == 3 and all(len(p) <= 4096 and p.endswith("goes on.") for p in parts)
    assert " ".join(parts) == text
    media = await sync_to_async(GeneratedMedia.objects.get)()
    assert await sync_to_async(stored_bytes)(media) == b"".join(mp3_of(p) for p in parts)
    entries = await sync_to_async(list)(SpendEntry.objects.filter(kind="text_to_speech").order_by("created_at"))
    assert [e.cost_usd for e in entries] == [Decimal(15) * len(p) / MILLION for p in parts]
    assert outcome.returns[0]["filename"] == media.filename


async def test_a_chunk_failing_midway_keeps_the_spoken_chunks_recorded_and_stores_nothing(setup, fake_speech,
                                                                                        caplog):
    fake_speech.queue("openai", Speech(), Speech.error(500, "server_error"))
    text = ("A sentence of the long text that is read aloud. " * 180).strip()

    with caplog.at_level("INFO"):
        outcome = await speak(setup, text, max_characters=10_000)

    first, _failed = (r.text for r in fake_speech.requests)
    retry = next(t for t in outcome.retries if "busy or down (HTTP 500, code server_error)" in t)
    assert "1 of 3 parts had been spoken and were billed" in retry
    [entry] = await sync_to_async(list)(SpendEntry.objects.filter(kind="text_to_speech"))
    assert entry.cost_usd == Decimal(15) * len(first) / MILLION
    assert await sync_to_async(GeneratedMedia.objects.count)() == 0
    assert SECRET_TEXT not in caplog.text and SECRET_TEXT not in str(outcome.messages)


async def test_a_wav_clip_is_24khz_pcm_from_every_chunk_under_one_header(setup, fake_speech):
    text = ("Short line for the wav test. " * 300).strip()

    await speak(setup, text, output_format="wav", max_characters=10_000)

    assert {r.json["response_format"] for r in fake_speech.requests} == {"pcm"}
    media = await sync_to_async(GeneratedMedia.objects.get)()
    data = await sync_to_async(stored_bytes)(media)
    pcm = b"".join(pcm_of(r.text) for r in fake_speech.requests)
    assert media.media_type == "audio/wav" and media.filename.endswith(".wav")
    assert data[:4] == b"RIFF" and data[8:16] == b"WAVEfmt " and data.count(b"RIFF") == 1
    channels, rate, _, _, bits = struct.unpack("<HIIHH", data[22:36])
    assert (channels, rate, bits) == (1, 24_000, 16)
    assert data[36:40] == b"data" and struct.unpack("<I", data[40:44])[0] == len(pcm) and data[44:] == pcm


# ------------------------------------------------------------------ ElevenLabs


async def test_elevenlabs_speaks_with_the_accounts_voice_by_id(setup, fake_speech):
    text = "Welcome to the show."

    outcome = await speak(setup, text, provider="elevenlabs", model="eleven_multilingual_v2", voice=VOICE_ID)

    [request] = fake_speech.requests
    assert (request.route, request.path) == ("elevenlabs", f"/v1/text-to-speech/{VOICE_ID}")
    assert request.headers["xi-api-key"] == KEY and "authorization" not in request.headers
    assert request.query == {"output_format": "mp3_44100_128"}
    assert request.json == {"text": text, "model_id": "eleven_multilingual_v2"}
    assert outcome.returns[0]["media_type"] == "audio/mpeg"
    entry = await sync_to_async(SpendEntry.objects.get)(kind="text_to_speech")
    assert entry.cost_usd == Decimal(100) * len(text) / MILLION


async def test_an_elevenlabs_wav_clip_is_asked_as_24khz_pcm_and_wrapped_here(setup, fake_speech):
    text = "Welcome back."

    outcome = await speak(setup, text, provider="elevenlabs", model="eleven_flash_v2_5", voice=VOICE_ID,
                          output_format="wav")

    [request] = fake_speech.requests
    assert request.query == {"output_format": "pcm_24000"}
    media = await sync_to_async(GeneratedMedia.objects.get)()
    assert outcome.returns[0]["media_type"] == "audio/wav"
    assert await sync_to_async(stored_bytes)(media) == audio.wav(pcm_of(text))


async def test_an_unknown_voice_the_model_chose_goes_back_to_it_and_the_authors_is_a_result(setup, fake_speech):
    other = "AAAAbbbbCCCCddddEEEE"
    outcome = await speak(setup, args={"voice": other}, provider="elevenlabs", model="eleven_flash_v2_5",
                          voice=VOICE_ID)
    assert any(f"does not know the voice {other!r} (HTTP 404, code voice_not_found)" in t for t in outcome.retries)

    fake_speech.account_voices.clear()
    outcome = await speak(setup, provider="elevenlabs", model="eleven_flash_v2_5", voice=VOICE_ID)
    assert outcome.returns[0].startswith("Refused: The speech provider does not know this agent's voice")
    assert await sync_to_async(GeneratedMedia.objects.count)() == 0


def test_an_elevenlabs_binding_without_an_account_voice_is_refused_at_publish(org):
    with pytest.raises(ValidationError, match="voice of your account"):
        TextToSpeechConfig.model_validate({"provider": "elevenlabs", "model": "eleven_multilingual_v2"})
    secret = factories.secret(org)
    problems = registry.validate_bindings(
        spec_with(secret, provider="elevenlabs", model="eleven_multilingual_v2"), organization=org,
        can_view_secret=lambda secret_id: True)
    assert any("voice of your account" in p["message"] for p in problems), problems


# ------------------------------------------------------------------ Gemini


async def test_gemini_speaks_wav_and_is_recorded_from_the_audio_it_returned(setup, fake_speech):
    text = "Say it slowly and warmly."

    outcome = await speak(setup, text, args={"instructions": "Warm"}, provider="google",
                          model="gemini-2.5-flash-preview-tts")

    [request] = fake_speech.requests
    assert request.headers["x-goog-api-key"] == KEY
    assert request.path == "/v1beta/models/gemini-2.5-flash-preview-tts:generateContent"
    assert request.json["generationConfig"]["speechConfig"]["voiceConfig"]["prebuiltVoiceConfig"] == {
        "voiceName": "Kore"}
    assert request.text == f"Warm:\n\n{text}"
    assert outcome.returns[0]["media_type"] == "audio/wav"
    entry = await sync_to_async(SpendEntry.objects.get)(kind="text_to_speech")
    seconds = len(pcm_of(request.text)) / 48_000
    tokens_in = len(request.text) // 4
    assert (entry.input_tokens, entry.output_tokens) == (tokens_in, round(seconds * 25))
    assert entry.cost_usd == (Decimal("0.5") * tokens_in + Decimal(10) * round(seconds * 25)) / MILLION


async def test_a_key_google_rejects_is_a_result_and_its_text_never_shows(setup, fake_speech, caplog):
    fake_speech.api_key = "another-key"

    with caplog.at_level("INFO"):
        outcome = await speak(setup, provider="google", model="gemini-2.5-flash-preview-tts")

    [answer] = outcome.returns
    assert "rejected this agent's API key (HTTP 400, code API_KEY_INVALID)" in answer and outcome.retries == []
    assert SECRET_TEXT not in caplog.text and SECRET_TEXT not in str(outcome.messages)
    assert KEY not in caplog.text and KEY not in str(outcome.messages)


async def test_a_text_gemini_refuses_on_safety_is_a_result_not_a_retry(setup, fake_speech):
    fake_speech.queue("gemini", Speech(finish_reason="SAFETY"))

    outcome = await speak(setup, provider="google", model="gemini-2.5-flash-preview-tts")

    assert "content policy refused this text" in outcome.returns[0] and outcome.retries == []
    assert await sync_to_async(GeneratedMedia.objects.count)() == 0


# ------------------------------------------------------------------ refused before anything is paid


@pytest.mark.parametrize("config", [
    {},
    {"provider": "elevenlabs", "model": "eleven_multilingual_v2", "voice": VOICE_ID},
    {"provider": "google", "model": "gemini-2.5-pro-preview-tts"},
], ids=["openai", "elevenlabs", "google"])
async def test_a_clip_whose_price_would_pass_the_budget_is_refused_before_the_provider(setup, fake_speech, org,
                                                                                     config):
    agent, _, _, _ = setup
    await sync_to_async(spend_all_but)(org, agent, "0.0001")  # a 40-character clip costs more than this

    outcome = await speak(setup, "x" * 40 + " and a few more words to say", **config)

    assert outcome.returns[0].startswith("Refused: The organization's monthly budget of $1.00 does not cover")
    await sync_to_async(nothing_happened)(fake_speech)


async def test_a_full_quota_refuses_before_the_budget_and_the_provider(setup, fake_speech, settings, org):
    settings.GENERATED_MEDIA_QUOTA_MB = 1
    _, chat, _, _ = setup
    await sync_to_async(store.save)(organization_id=org.pk, run_id=None, conversation_id=chat.pk, kind="image",
                                    data=b"x" * (1024 * 1024), media_type="image/png", name="old")

    outcome = await speak(setup)

    assert outcome.returns[0].startswith("Refused") and "quota" in outcome.returns[0]
    assert fake_speech.requests == [] and await sync_to_async(SpendEntry.objects.count)() == 0


@pytest.mark.parametrize(("args", "config", "message"), [
    ({"text": "  "}, {}, "text must be 1-5000 characters"),
    ({"text": "x" * 51}, {"max_characters": 50}, "text must be 1-50 characters"),
    ({"text": "Hi", "voice": "shimmer"}, {"voices": [{"id": "onyx"}]}, "voice must be one of ['alloy', 'onyx']"),
    ({"text": "Hi", "voice": "nobody"}, {}, "voice must be one of"),
    ({"text": "Hi", "instructions": "x" * 1001}, {}, "instructions must be at most 1000"),
])
async def test_the_models_own_mistakes_go_back_to_it_before_anything_is_paid(setup, fake_speech, args, config,
                                                                           message):
    _, _, the_run, secret = setup
    outcome = await run(spec_with(secret, **config), [("generate_speech", args)], run_deps(the_run))

    assert any(message in text for text in outcome.retries), outcome.retries
    await sync_to_async(nothing_happened)(fake_speech)


async def test_a_member_hears_the_clip_and_another_organizations_member_gets_404(setup, fake_speech, org, member,
                                                                               outsider, outsider_org, api_as):
    outcome = await speak(setup)
    url = outcome.returns[0]["url"]

    response = await sync_to_async(api_as(member, org).get)(url)
    assert response.status_code == 200 and response["Content-Type"] == "audio/mpeg"
    assert (await sync_to_async(api_as(outsider, outsider_org).get)(url)).status_code == 404


# ------------------------------------------------------------------ the declaration, its config and catalog


def test_it_is_side_effecting_needs_a_key_and_publish_refuses_without_one(org):
    assert CAPABILITY.tool("generate_speech").side_effecting
    entry = CAPABILITY.catalog_entry()
    assert entry["key"]["kind"] == "api_key"
    assert entry["config_schema"]["properties"]["provider"]["enum"] == ["elevenlabs", "google", "openai"]
    problems = registry.validate_bindings(AgentSpec(name="P", capabilities=[{"id": "text_to_speech"}]),
                                          organization=org, can_view_secret=lambda secret_id: True)
    assert any("secret" in p["field"] for p in problems), problems


@pytest.mark.parametrize(("config", "message"), [
    ({"model": "eleven_multilingual_v2"}, "model must be one of"),
    ({"model": "tts-1", "voice": "marin"}, "not voices of tts-1"),
    ({"voices": [{"id": "verse"}, {"id": "verse"}]}, "twice"),
    ({"provider": "google", "model": "gemini-2.5-flash-preview-tts", "output_format": "mp3"}, "output_format"),
    ({"provider": "elevenlabs", "model": "eleven_flash_v2_5", "voice": "not a voice id!"}, "not ElevenLabs"),
    ({"max_characters": 10_001}, "max_characters"),
    ({"voices": [{"id": f"v{n}"} for n in range(21)]}, "voices"),
])
def test_a_config_the_model_cannot_speak_is_refused(config, message):
    with pytest.raises(ValidationError, match=message):
        TextToSpeechConfig.model_validate(config)


def test_catalog_entries_without_a_client_are_dropped_and_a_malformed_file_raises(caplog):
    model = {"id": "m", "name": "M", "use_when": "x", "max_input_characters": 1000,
             "prices": [{"from": "2026-01-01", "usd_per_million_characters": "10"}]}
    voice = [{"id": "v", "description": "A voice"}]
    document = {"providers": [
        {"id": "openai", "name": "OpenAI", "api": "openai-speech", "base_url": "https://x", "formats": ["mp3"],
         "voices": voice, "models": [model]},
        {"id": "polly", "name": "Polly", "api": "aws-polly", "base_url": "https://y", "formats": ["mp3"],
         "voices": voice, "models": [model]},
    ]}
    assert list(catalog.parse(document)) == ["openai"]
    assert "polly dropped: no client for the API 'aws-polly'" in caplog.text
    broken = {"providers": [{**document["providers"][0], "models": [{**model, "voices": ["ghost"]}]}]}
    with pytest.raises(ValidationError, match="ghost"):
        catalog.parse(broken)


def test_a_dated_price_applies_from_its_day_and_gemini_doubles_on_2027_01_01():
    flash = catalog.model("google", "gemini-2.5-flash-preview-tts")
    assert flash is not None
    before = catalog.price_on(flash, date(2026, 12, 31))
    after = catalog.price_on(flash, date(2027, 1, 1))
    assert before is not None and after is not None
    assert after.usd_per_million_audio_tokens == 2 * before.usd_per_million_audio_tokens
    assert catalog.price_on(flash, date(2025, 1, 1)) is None


def test_a_text_splits_at_a_paragraph_then_a_sentence_then_a_word():
    assert audio.split("First paragraph here.\n\nSecond one is here.", 30) == [
        "First paragraph here.", "Second one is here."]
    assert audio.split("One sentence here. Another sentence there.", 30) == [
        "One sentence here.", "Another sentence there."]
    assert audio.split("words without any stop at all in them", 15) == [
        "words without", "any stop at all", "in them"]
    assert audio.split("x" * 25, 10) == ["x" * 10, "x" * 10, "x" * 5]
    assert all(audio.looks_like_mp3(mp3_of(t)) for t in ("a", "b")) and not audio.looks_like_mp3(b"<html>")
    assert MP3_HEAD.startswith(b"ID3")

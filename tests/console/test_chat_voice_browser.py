"""The composer's microphone in Debian's chromium against daphne, at 1440 and 390 px (issue 45 §6): Chromium's fake
microphone plays a generated WAV; the person presses the microphone, presses it again to stop, the recording goes
to the local fake OpenAI server through POST /api/v1/transcriptions, the text appears in the message box for them to
edit, and Send sends it as their message. The spend is in the ledger for the agent. Without a speech-to-text
profile, and without a microphone the browser lets the page use, the person reads why under the composer."""

from __future__ import annotations

import math
import struct
import wave

import pytest

from agents.models import Message, ModelProfile
from governance.models import SpendEntry
from tests import factories
from tests.browser_servers import CHROMIUM, CHROMIUM_ARGS
from tests.console.browser_steps import sign_in
from tests.console.conftest import ARTIFACTS
from tests.console.test_conversation_actions_browser import person
from tests.fakes.openai_server import Reply

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
TIMEOUT = 30_000
SAID = "What is on my calendar tomorrow"


@pytest.fixture
def loopback_models(monkeypatch):
    """daphne (a process of its own) reads the model hosts' allowance from its environment: the fake provider
    listens on 127.0.0.1. Asked before live_server_url, so the server is started with it."""
    monkeypatch.setenv("MODEL_ALLOWED_PRIVATE_HOSTS", "127.0.0.1")


def tone_wav(path) -> str:
    """Two seconds of a 440 Hz tone, 16-bit mono 16 kHz: what Chromium's fake microphone plays."""
    rate = 16_000
    with wave.open(str(path), "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(rate)
        out.writeframes(b"".join(struct.pack("<h", int(8000 * math.sin(2 * math.pi * 440 * n / rate)))
                                 for n in range(rate * 2)))
    return str(path)


@pytest.fixture
def microphone_browser(browser, tmp_path):
    """A Chromium of its own with a fake microphone that plays the WAV, its permission prompt answered yes."""
    flags = ["--use-fake-device-for-media-stream", "--use-fake-ui-for-media-stream",
             f"--use-file-for-fake-audio-capture={tone_wav(tmp_path / 'said.wav')}"]
    instance = browser.browser_type.launch(executable_path=CHROMIUM, headless=True, args=[*CHROMIUM_ARGS, *flags],
                                           timeout=120_000)
    try:
        yield instance
    finally:
        instance.close()


def open_chat(instance, base_url: str, email: str, width: int):
    context = instance.new_context(viewport={"width": width, "height": 800}, has_touch=width < 500)
    page = context.new_page()
    page.set_default_timeout(TIMEOUT)
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    sign_in(page, base_url, email, then="/chat/")
    page.locator("[data-composer]").wait_for()
    return context, page, errors


@pytest.mark.parametrize("width", [1440, 390])
def test_a_person_records_reads_the_text_in_the_composer_and_sends_it(loopback_models, live_server_url,
                                                                     microphone_browser, fake_openai, width):
    org = factories.organization(name="Acme")
    owner = person(org, "owner@example.com", "owner")
    agent = factories.published_agent(org, owner, name="Helper")
    factories.model_profile(org, "openai_compatible", "whisper-1", label="Speech", api_key="sk-speech-0123456789",
                            base_url=fake_openai.base_url, kind=ModelProfile.Kind.TRANSCRIPTION)
    fake_openai.queue(Reply.text(SAID), route="transcriptions")
    context, page, errors = open_chat(microphone_browser, live_server_url, "owner@example.com", width)

    mic = page.get_by_role("button", name="Speak instead of typing")
    mic.click()
    stop = page.get_by_role("button", name="Stop recording")
    stop.wait_for()
    assert stop.get_attribute("aria-pressed") == "true"
    page.get_by_text("Recording… press the microphone again to stop.").wait_for()
    stop.click()
    page.get_by_text("The text is in the message box: check it, then send.").wait_for()
    box = page.get_by_label("Message", exact=True)
    assert box.input_value() == SAID
    (request,) = fake_openai.requests_to("transcriptions")
    assert request.bearer == "sk-speech-0123456789"
    assert request.form["model"] == "whisper-1" and request.form["file"]["size"] > 0
    assert request.form["file"]["content_type"].startswith("audio/")
    page.screenshot(path=str(ARTIFACTS / f"chat-voice-{width}.png"))

    # The person edits the text, then sends it: their message is what the box said.
    box.fill(SAID + ", please")
    page.get_by_role("button", name="Send").click()
    page.locator(".turn-user", has_text=SAID + ", please").wait_for()
    page.locator(".turn-assistant").first.wait_for()
    assert Message.objects.filter(role="user", content=SAID + ", please").exists()
    entry = SpendEntry.objects.get(kind="transcription")
    assert (entry.agent_id, entry.surface) == (agent.pk, "web")
    assert page.evaluate("() => document.documentElement.scrollWidth") <= width + 1
    assert errors == []
    context.close()


def test_without_a_speech_profile_the_person_reads_why_and_the_box_keeps_its_text(loopback_models, live_server_url,
                                                                                  microphone_browser, fake_openai):
    org = factories.organization(name="Acme")
    owner = person(org, "owner@example.com", "owner")
    factories.published_agent(org, owner, name="Helper")
    context, page, errors = open_chat(microphone_browser, live_server_url, "owner@example.com", 1440)
    box = page.get_by_label("Message", exact=True)
    box.fill("typed before")
    page.get_by_role("button", name="Speak instead of typing").click()
    page.get_by_role("button", name="Stop recording").click()
    alert = page.locator("[data-voice-status][role=alert]")
    alert.wait_for()
    assert "Not transcribed: No speech-to-text model is set up" in alert.inner_text()
    assert box.input_value() == "typed before"
    assert fake_openai.requests == []
    assert errors == []
    context.close()


def test_a_browser_that_gives_no_microphone_says_so(live_server_url, browser):
    """The suite's own Chromium has no fake device and no prompt to answer: getUserMedia is refused."""
    org = factories.organization(name="Acme")
    owner = person(org, "owner@example.com", "owner")
    factories.published_agent(org, owner, name="Helper")
    context, page, errors = open_chat(browser, live_server_url, "owner@example.com", 390)
    page.get_by_role("button", name="Speak instead of typing").click()
    alert = page.locator("[data-voice-status][role=alert]")
    alert.wait_for()
    assert alert.inner_text() in ("The browser did not allow the microphone. Allow it for this site, then try again.",
                                  "No microphone was found.")
    assert page.get_by_role("button", name="Speak instead of typing").get_attribute("aria-pressed") == "false"
    assert not SpendEntry.objects.exists()
    assert errors == []
    context.close()

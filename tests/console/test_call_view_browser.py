"""The call view of /chat in Debian's chromium with a fake microphone (`--use-fake-device-for-media-stream`: a
beep, sent as PCM16 by the page) against daphne and the local fake of OpenAI's Realtime API: start a call, live
captions and both turns, an ask_user card answered with a click, mute, hang up — and no console error; a tool that
needs approval waits on a card in the call view until the person approves it."""

from __future__ import annotations

import base64

import pytest

from agenticos.models import Membership
from agents.models import Message, ModelProfile
from tests import factories
from tests.browser_servers import CHROMIUM, CHROMIUM_ARGS
from tests.console.browser_steps import sign_in
from tests.fakes.realtime_server import KEY, Reply, realtime_server  # noqa: F401  (fixture)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
PASSWORD = "pw-correct-horse-9"
TIMEOUT = 30_000
FAKE_MEDIA = ["--use-fake-device-for-media-stream", "--use-fake-ui-for-media-stream",
              "--autoplay-policy=no-user-gesture-required"]


@pytest.fixture
def fake(realtime_server, monkeypatch):  # noqa: F811
    # Before live_server_url: daphne is started with the environment the test gives it.
    monkeypatch.setenv("MODEL_ALLOWED_PRIVATE_HOSTS", "127.0.0.1")
    realtime_server.reset()
    realtime_server.default_heard = None  # the fake microphone beeps all along: VAD hears only what is scripted
    return realtime_server


@pytest.fixture
def call_browser(browser, _session_chromium):
    # A Chromium of its own: the fake microphone is a launch flag.
    instance = _session_chromium.manager._playwright.chromium.launch(
        executable_path=CHROMIUM, headless=True, args=[*CHROMIUM_ARGS, *FAKE_MEDIA], timeout=120_000)
    try:
        yield instance
    finally:
        instance.close()


def test_a_person_calls_an_agent_answers_its_card_mutes_and_hangs_up(fake, live_server_url, call_browser):
    org = factories.organization(name="Acme")
    owner = factories.user(email="owner@example.com", password=PASSWORD)
    Membership.objects.create(organization=org, user=owner, role="owner")
    factories.published_agent(org, owner, name="Concierge", capabilities=[{"id": "ask_user"}])
    factories.model_profile(org, "openai", "gpt-realtime", label="Voice", api_key=KEY, base_url=fake.base_url,
                            kind=ModelProfile.Kind.REALTIME)
    fake.utterance_bytes = 24000  # half a second of the microphone
    fake.heard.append("Book me a table.")
    fake.replies.extend([Reply.call("ask_user_question", question="Which day?", options=["Monday", "Tuesday"]),
                         Reply.say("Tuesday it is.")])

    context = call_browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.set_default_timeout(TIMEOUT)
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    sign_in(page, live_server_url, "owner@example.com", then="/chat/")

    page.get_by_role("button", name="Start call").click()
    page.get_by_text("On a call with Concierge").wait_for()
    page.locator('.call-turn[data-role="user"]', has_text="Book me a table.").wait_for()
    card = page.locator("[data-call-question]")
    card.get_by_text("Which day?").wait_for()
    card.get_by_role("button", name="Tuesday").click()
    page.locator('.call-turn[data-role="assistant"]', has_text="Tuesday it is.").wait_for()
    assert card.count() == 0

    mute = page.get_by_role("button", name="Mute")
    mute.click()
    assert page.get_by_role("button", name="Unmute").get_attribute("aria-pressed") == "true"
    page.get_by_role("button", name="Hang up").click()
    page.get_by_role("button", name="Start call").wait_for()
    context.close()

    appended = [e["audio"] for e in fake.received if e["type"] == "input_audio_buffer.append"]
    assert appended and any(any(base64.b64decode(chunk)) for chunk in appended)  # the microphone's sound
    assert "input_audio_buffer.clear" in fake.received_types()
    said = list(Message.objects.filter(conversation__organization=org).order_by("id").values_list("role", "content"))
    assert said == [("user", "Book me a table."), ("assistant", "Tuesday it is.")]
    assert errors == []


@pytest.fixture
def local_tools(monkeypatch):
    # Before live_server_url: the MCP fake lives on 127.0.0.1, which the operator lists for tools.
    monkeypatch.setenv("TOOL_ALLOWED_PRIVATE_HOSTS", "127.0.0.1")


def test_a_tool_that_needs_approval_waits_on_a_card_in_the_call_view_until_the_person_approves(
        fake, local_tools, live_server_url, call_browser):
    from capabilities.models import McpConnection
    from tests.fakes.mcp_server import FakeMCPServer

    mcp = FakeMCPServer(token="mcp-browser-token-1").start()
    try:
        org = factories.organization(name="Acme")
        owner = factories.user(email="owner@example.com", password=PASSWORD)
        Membership.objects.create(organization=org, user=owner, role="owner")
        connection = McpConnection.objects.create(
            organization=org, name="fake", url=mcp.url, auth_secret=factories.secret(org, value="mcp-browser-token-1"),
            tools=[{"name": "weather", "description": ""}])
        factories.published_agent(org, owner, name="Concierge", capabilities=[{"id": "mcp", "config": {"connections": [
            {"connection_id": str(connection.pk), "allowed_tools": ["weather"],
             "tool_approval": {"fake_weather": "required"}}]}}])
        factories.model_profile(org, "openai", "gpt-realtime", label="Voice", api_key=KEY, base_url=fake.base_url,
                                kind=ModelProfile.Kind.REALTIME)
        fake.utterance_bytes = 24000
        fake.heard.append("What is the weather in Oslo?")
        fake.replies.extend([Reply.call("fake_weather", city="Oslo"), Reply.say("That needs your approval."),
                             Reply.say("It is sunny in Oslo.")])

        context = call_browser.new_context(viewport={"width": 1280, "height": 900})
        page = context.new_page()
        page.set_default_timeout(TIMEOUT)
        errors: list[str] = []
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: errors.append(str(e)))
        sign_in(page, live_server_url, "owner@example.com", then="/chat/")

        page.get_by_role("button", name="Start call").click()
        card = page.locator("[data-call-approval]")
        card.get_by_text("Needs your approval: fake_weather").wait_for()
        assert "Oslo" in card.locator(".call-approval-args").inner_text()
        page.locator('.call-turn[data-role="assistant"]', has_text="That needs your approval.").wait_for()
        assert mcp.calls == []  # the call waits: nothing ran before the click
        card.get_by_role("button", name="Approve").click()
        page.locator('.call-turn[data-role="assistant"]', has_text="It is sunny in Oslo.").wait_for()
        assert card.count() == 0
        assert mcp.calls == [("weather", {"city": "Oslo"})]
        page.get_by_role("button", name="Hang up").click()
        context.close()
        assert errors == []
    finally:
        mcp.stop()

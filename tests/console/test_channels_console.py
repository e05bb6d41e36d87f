"""Channels in the console: adding Slack / Telegram / Mattermost bots (write-only credentials, the pencil),
the connection badge with its reason, pause / resume / delete, the Telegram Register-webhook button against the
fake Telegram, the Slack manifest, and a binding's full settings — then a Slack bot set up only through these
screens answering the fake Slack. Viewers see and never change; outsiders get 404."""

from __future__ import annotations

import pytest

from agenticos.models import AuditEvent
from channelbots import services
from channelbots.models import Binding, ChannelBot, ConnectionState
from tests import factories
from tests.fakes.mattermost import fake_mattermost  # noqa: F401  (fixture)
from tests.fakes.slack_api import FakeSlack, SlackEventSender
from tests.fakes.telegram_api import FakeTelegram

pytestmark = pytest.mark.django_db
FRONTEND = "https://agents.example.com"
SLACK_TOKEN = "xoxb-test-token-0001"
SIGNING = "8f742231b10e8888abcd99yyyzzz85a5"
APP_TOKEN = "xapp-1-A111-secret-app-token"


@pytest.fixture(autouse=True)
def _channel_settings(settings):
    settings.FRONTEND_URL = FRONTEND
    settings.CHANNEL_ALLOWED_PRIVATE_HOSTS = ["127.0.0.1"]  # the fake platforms listen there


@pytest.fixture
def fake_slack():
    with FakeSlack() as server:
        yield server


@pytest.fixture
def fake_telegram():
    with FakeTelegram() as server:
        yield server


@pytest.fixture
def shop(org, builder):
    return factories.published_agent(org, builder, name="Shop")


def add_bot(client, **data):
    return client.post("/channels/", {"name": "Support", "transport": "webhook", "mode": "open",
                                      "rate_limit_rpm": "10", **data})


def slack_bot(client, fake):
    response = add_bot(client, platform="slack", token=SLACK_TOKEN, signing_secret=SIGNING,
                       api_base_url=fake.base_url)
    assert response.status_code == 302, response.content.decode()[:2000]
    return ChannelBot.objects.get(platform="slack")


# ------------------------------------------------------------------ adding and editing bots


def test_a_builder_adds_a_slack_events_bot_and_its_page_shows_urls_and_the_manifest_never_a_secret(
        client_as, org, builder, fake_slack):
    client = client_as(builder, org)
    bot = slack_bot(client, fake_slack)
    assert services.reveal_credentials(bot) == {"token": SLACK_TOKEN, "signing_secret": SIGNING}
    page = client.get(f"/channels/{bot.pk}/").content.decode()
    assert SLACK_TOKEN not in page and SIGNING not in page
    assert f"{FRONTEND}/api/v1/slack/{bot.pk}/events" in page
    assert f"{FRONTEND}/api/v1/slack/{bot.pk}/interactions" in page
    manifest = page.split("data-manifest>", 1)[1].split("</pre>", 1)[0]
    for scope in ("chat:write", "files:write", "files:read", "app_mentions:read", "users:read", "channels:read",
                  "groups:read", "channels:history", "groups:history", "im:history", "mpim:history", "im:read",
                  "mpim:read"):
        assert f"      - {scope}\n" in manifest
    for event in ("app_mention", "message.channels", "message.groups", "message.im", "message.mpim"):
        assert f"      - {event}\n" in manifest
    assert f"request_url: {FRONTEND}/api/v1/slack/{bot.pk}/events" in manifest
    assert "socket_mode_enabled: false" in manifest and "token_rotation_enabled: false" in manifest
    assert page.count('data-stored') == 2 and 'data-credential="app_token"' in page


def test_a_socket_mode_bot_without_its_app_token_says_why_it_is_not_started(client_as, org, builder):
    client = client_as(builder, org)
    response = add_bot(client, platform="slack", transport="polling", token=SLACK_TOKEN)
    bot = ChannelBot.objects.get()
    assert response.status_code == 302 and bot.transport == "polling"
    services.record_connection(bot.pk, ConnectionState.NOT_STARTED, "Socket Mode needs the xapp- app-level token.")
    listing = client.get("/channels/").content.decode()
    row = listing.split(f'data-bot-row="{bot.pk}"', 1)[1].split("</tr>", 1)[0]
    assert 'data-connection="not_started"' in row and "Not connected" in row
    assert "Socket Mode needs the xapp- app-level token." in row
    assert "data-unbound" in row
    manifest = client.get(f"/channels/{bot.pk}/").content.decode().split("data-manifest>", 1)[1]
    assert "socket_mode_enabled: true" in manifest.split("</pre>")[0] and "request_url" not in manifest.split("</pre>")[0]


def test_an_empty_token_field_keeps_the_stored_one_and_a_typed_one_replaces_it(client_as, org, builder):
    client = client_as(builder, org)
    add_bot(client, platform="slack", transport="polling", token=SLACK_TOKEN)
    bot = ChannelBot.objects.get()
    form = {"name": "Renamed", "api_base_url": "", "token": "", "app_token": "", "signing_secret": "",
            "stt": "groq:whisper-large-v3", "mode": "whitelist", "whitelist": "U1\nU2", "rate_limit_rpm": "30"}
    assert client.post(f"/channels/{bot.pk}/", form).status_code == 302
    bot.refresh_from_db()
    assert services.reveal_credentials(bot) == {"token": SLACK_TOKEN}
    assert bot.name == "Renamed" and (bot.stt_provider, bot.stt_model) == ("groq", "whisper-large-v3")
    assert bot.policy["mode"] == "whitelist" and bot.policy["whitelist"] == ["U1", "U2"]
    assert bot.policy["rate_limit_rpm"] == 30
    assert client.post(f"/channels/{bot.pk}/", {**form, "app_token": APP_TOKEN}).status_code == 302
    assert services.reveal_credentials(bot) == {"token": SLACK_TOKEN, "app_token": APP_TOKEN}
    assert APP_TOKEN not in client.get(f"/channels/{bot.pk}/").content.decode()


def test_a_mattermost_bot_needs_its_server_and_a_refused_form_does_not_echo_the_token(client_as, org, builder):
    client = client_as(builder, org)
    token = "mattermost-bot-token-123456"
    response = add_bot(client, platform="mattermost", token=token)
    assert response.status_code == 422 and ChannelBot.objects.count() == 0
    page = response.content.decode()
    assert "server address" in page and token not in page
    response = add_bot(client, platform="mattermost", token=token, api_base_url="http://169.254.169.254")
    assert response.status_code == 422 and ChannelBot.objects.count() == 0
    ok = add_bot(client, platform="mattermost", token=token, api_base_url="https://chat.example.com",
                 webhook_secret="outgoing-hook-token-1")
    assert ok.status_code == 302
    bot = ChannelBot.objects.get()
    assert bot.api_base_url == "https://chat.example.com"
    assert services.reveal_credentials(bot)["webhook_secret"] == "outgoing-hook-token-1"


def test_pause_resume_and_delete_go_through_the_services_with_their_audit(client_as, org, builder):
    client = client_as(builder, org)
    add_bot(client, platform="telegram", token="123456:ABCDEFGHIJ-telegram")
    bot = ChannelBot.objects.get()
    client.post(f"/channels/{bot.pk}/pause")
    bot.refresh_from_db()
    assert bot.is_paused
    assert 'data-connection="paused"' in client.get(f"/channels/{bot.pk}/").content.decode()
    client.post(f"/channels/{bot.pk}/resume")
    bot.refresh_from_db()
    assert not bot.is_paused
    assert client.post(f"/channels/{bot.pk}/delete").status_code == 302
    assert not ChannelBot.objects.exists()
    actions = set(AuditEvent.objects.filter(organization=org).values_list("action", flat=True))
    assert {"channelbot.create", "channelbot.pause", "channelbot.resume", "channelbot.delete"} <= actions


def test_register_webhook_sets_the_deployment_url_and_its_secret_at_the_fake_telegram(
        client_as, org, builder, fake_telegram):
    client = client_as(builder, org)
    add_bot(client, platform="telegram", transport="polling", token=fake_telegram.token,
            api_base_url=fake_telegram.url)
    bot = ChannelBot.objects.get()
    assert fake_telegram.webhook == {}
    response = client.post(f"/channels/{bot.pk}/register-webhook")
    assert response.status_code == 302
    bot.refresh_from_db()
    secret = services.reveal_credentials(bot)["webhook_secret"]
    assert bot.transport == "webhook" and bot.platform_bot_username == "acme_bot"
    assert fake_telegram.webhook["url"] == f"{FRONTEND}/api/v1/telegram/{bot.pk}/webhook"
    assert fake_telegram.webhook["secret_token"] == secret
    page = client.get(f"/channels/{bot.pk}/").content.decode()
    assert "Telegram webhook registered" in page and secret not in page


def test_a_webhook_telegram_refuses_rejected_token_and_shows_why(client_as, org, builder, fake_telegram):
    client = client_as(builder, org)
    add_bot(client, platform="telegram", token="999999:WRONG-token-here", api_base_url=fake_telegram.url)
    bot = ChannelBot.objects.get()
    response = client.post(f"/channels/{bot.pk}/register-webhook")
    assert response.status_code == 422 and "data-webhook-error" in response.content.decode()
    assert fake_telegram.webhook == {}
    bot.refresh_from_db()
    assert bot.connection_state == "not_started" and "setWebhook failed" in bot.connection_reason


# ------------------------------------------------------------------ a binding's settings


def bound(client, shop, bot):
    assert client.post(f"/agents/{shop.pk}/bindings", {"bot_id": str(bot.pk), "environment": "production"}
                       ).status_code == 302
    return Binding.objects.get(bot=bot)


def test_a_new_binding_opens_with_the_platform_starter_and_the_real_tool_descriptions(
        client_as, org, builder, shop, fake_slack):
    from capabilities.channel_tools import capability

    client = client_as(builder, org)
    binding = bound(client, shop, slack_bot(client, fake_slack))
    builder_page = client.get(f"/agents/{shop.pk}/").content.decode()
    assert f"/agents/{shop.pk}/bindings/{binding.pk}/" in builder_page
    page = client.get(f"/agents/{shop.pk}/bindings/{binding.pk}/").content.decode()
    assert "data-starter-note" in page and "Slack does not render Markdown" in page
    for name in ("channel_name", "channel_purpose", "channel_topic", "member_count", "member_list"):
        assert f"{{{name}}}" in page
    first_line = capability.read_channel_history.__doc__.strip().splitlines()[0]
    assert first_line in page
    assert 'data-channel-tool="send_channel_file"' in page


def test_saving_a_binding_writes_every_setting_and_the_bot_access_policy(
        client_as, org, builder, shop, fake_slack):
    client = client_as(builder, org)
    binding = bound(client, shop, slack_bot(client, fake_slack))
    form = {"environment": "production", "extra_prompt": "Answer in {channel_name} briefly.",
            "workspace_scope": "channel", "channel_tools": ["get_channel_info", "read_channel_history"],
            "channel_tools_limit": "50", "footer_mode": "every_n", "footer_every_n": "5",
            "footer_threshold_percent": "65", "mode": "group_only", "allowed_groups": "C1\nC2", "rate_limit_rpm": "7", "denied_message": "No."}
    response = client.post(f"/agents/{shop.pk}/bindings/{binding.pk}/", form)
    assert response.status_code == 302
    binding.refresh_from_db()
    assert binding.extra_prompt == "Answer in {channel_name} briefly." and binding.workspace_scope == "channel"
    assert binding.channel_tools == ["get_channel_info", "read_channel_history"]
    assert (binding.channel_tools_limit, binding.footer_mode, binding.footer_every_n) == (50, "every_n", 5)
    assert binding.footer_threshold_percent == 65
    policy = ChannelBot.objects.get(pk=binding.bot_id).policy
    assert policy["mode"] == "group_only" and policy["allowed_groups"] == ["C1", "C2"]
    assert policy["rate_limit_rpm"] == 7 and policy["denied_message"] == "No."
    page = client.get(f"/agents/{shop.pk}/bindings/{binding.pk}/").content.decode()
    assert "data-starter-note" not in page and "Answer in {channel_name} briefly." in page
    bad = client.post(f"/agents/{shop.pk}/bindings/{binding.pk}/", {**form, "channel_tools_limit": "999"})
    assert bad.status_code == 422
    binding.refresh_from_db()
    assert binding.channel_tools_limit == 50


def test_telegram_offers_only_the_two_tools_it_can_answer(client_as, org, builder, shop):
    client = client_as(builder, org)
    add_bot(client, platform="telegram", token="123456:ABCDEFGHIJ-telegram")
    binding = bound(client, shop, ChannelBot.objects.get())
    page = client.get(f"/agents/{shop.pk}/bindings/{binding.pk}/").content.decode()
    assert 'data-channel-tool="get_channel_info"' in page and 'data-channel-tool="list_channel_members"' in page
    assert 'data-channel-tool="read_channel_history"' not in page
    assert "Telegram refuses a message with an unclosed" in page


# ------------------------------------------------------------------ the real path


def test_a_slack_bot_set_up_only_in_the_console_answers_the_fake_slack(
        celery_worker, scripted_model, client_as, client, org, builder, shop, fake_slack):
    from tests.channelbots.conftest import wait_until
    from tests.channelbots.test_slack_end_to_end import streaming_model

    console = client_as(builder, org)
    bot = slack_bot(console, fake_slack)
    binding = bound(console, shop, bot)
    console.post(f"/agents/{shop.pk}/bindings/{binding.pk}/", {
        "environment": "production", "extra_prompt": "", "workspace_scope": "", "channel_tools_limit": "20",
        "footer_mode": "log_only", "footer_every_n": "10", "mode": "open", "rate_limit_rpm": "10"})
    scripted_model(streaming_model("Set up from the console."))
    sender = SlackEventSender(client, str(bot.pk), SIGNING)
    event = sender.message("<@UBOT> are you there?", user="U7", channel="C9")
    assert sender.send(event).status_code == 200
    post = wait_until(lambda: next((p for p in fake_slack.answers("C9") if p.final == "Set up from the console."),
                                   None))
    assert post.thread_ts == event["ts"]


def test_a_telegram_bot_set_up_only_in_the_console_hears_a_voice_note_through_its_registered_webhook(
        celery_worker, scripted_model, client_as, client, org, builder, shop, fake_telegram, fake_openai, settings,
        tmp_path):
    import json

    from agents.models import Run
    from tests.channelbots.conftest import wait_until
    from tests.channelbots.test_slack_end_to_end import streaming_model
    from tests.fakes.openai_server import Reply
    from tests.fakes.telegram_api import telegram_message

    settings.MEDIA_ROOT = str(tmp_path / "media")
    factories.model_profile(org, "openai", "gpt-4o", api_key="sk-test-openai-key-0001", base_url=fake_openai.base_url)
    console = client_as(builder, org)
    add_bot(console, platform="telegram", transport="polling", token=fake_telegram.token,
            api_base_url=fake_telegram.url, stt="openai:whisper-1")
    bot = ChannelBot.objects.get()
    assert console.post(f"/channels/{bot.pk}/register-webhook").status_code == 302
    bound(console, shop, bot)
    fake_telegram.files["v1"] = ("voice/file_1.oga", b"OggS fake audio bytes")
    fake_openai.queue(Reply.text("is the shop open"), route="transcriptions")
    scripted_model(streaming_model("Open until six."))
    # Telegram calls the URL it was given, with the secret it was given: nothing else is known here.
    path = fake_telegram.webhook["url"].removeprefix(FRONTEND)
    # In a group, a reply to the bot addresses it (the bot's own id came from getMe when the webhook was set).
    message = telegram_message(chat_id=-55, chat_type="group", voice={"file_id": "v1", "mime_type": "audio/ogg"},
                               reply_to_message={"message_id": 1, "from": {"id": 777}})
    wrong = client.post(path, data=json.dumps({"update_id": 1, "message": message}), content_type="application/json",
                        HTTP_X_TELEGRAM_BOT_API_SECRET_TOKEN="not-the-secret")
    assert wrong.status_code == 403 and not Run.objects.exists()
    response = client.post(path, data=json.dumps({"update_id": 2, "message": message}),
                           content_type="application/json",
                           HTTP_X_TELEGRAM_BOT_API_SECRET_TOKEN=fake_telegram.webhook["secret_token"])
    assert response.status_code == 200
    run = wait_until(lambda: Run.objects.filter(status="completed").first())
    assert run.surface == "telegram" and "[Voice message, transcribed]" in run.prompt
    assert "is the shop open" in run.prompt
    wait_until(lambda: any(m["edits"][-1:] == ["Open until six."] or m["text"] == "Open until six."
                           for m in fake_telegram.sent("-55")))


def test_a_mattermost_webhook_bot_answers_once_the_pencil_adds_the_token_mattermost_showed(
        celery_worker, scripted_model, client_as, client, org, builder, shop, fake_mattermost):
    from agents.models import Run
    from tests.channelbots.conftest import wait_until
    from tests.channelbots.test_slack_end_to_end import streaming_model

    console = client_as(builder, org)
    add_bot(console, platform="mattermost", token=fake_mattermost.token, api_base_url=fake_mattermost.url)
    bot = ChannelBot.objects.get()
    bound(console, shop, bot)
    scripted_model(streaming_model("Restarted."))
    path = f"/api/v1/mattermost/{bot.pk}/webhook"
    body = {"token": "tok-from-mattermost-1", "channel_id": "town", "post_id": "p9", "user_id": "ada",
            "user_name": "ada", "text": "opsbot restart?", "trigger_word": "opsbot"}
    assert client.post(path, body).status_code == 403  # no token stored yet: every call is refused
    assert "No outgoing-webhook token" in console.get(f"/channels/{bot.pk}/").content.decode()
    form = {"name": "Support", "api_base_url": fake_mattermost.url, "token": "",
            "webhook_secret": "tok-from-mattermost-1", "stt": "", "mode": "open", "rate_limit_rpm": "10"}
    assert console.post(f"/channels/{bot.pk}/", form).status_code == 302
    page = console.get(f"/channels/{bot.pk}/").content.decode()
    assert "No outgoing-webhook token" not in page and "tok-from-mattermost-1" not in page
    assert services.reveal_credentials(bot) == {"token": fake_mattermost.token,
                                                "webhook_secret": "tok-from-mattermost-1"}
    assert client.post(path, body).status_code == 200
    wait_until(lambda: next((p for p in fake_mattermost.answers("town") if p["edits"][-1:] == ["Restarted."]
                             or p.get("message") == "Restarted."), None))
    run = Run.objects.get()
    assert run.surface == "mattermost" and run.prompt == "restart?"


# ------------------------------------------------------------------ who may


def test_a_viewer_sees_the_bots_and_changes_nothing(client_as, org, builder, viewer, shop):
    admin_client = client_as(builder, org)
    add_bot(admin_client, platform="telegram", token="123456:ABCDEFGHIJ-telegram")
    bot = ChannelBot.objects.get()
    binding = bound(admin_client, shop, bot)
    client = client_as(viewer, org)
    listing = client.get("/channels/")
    assert listing.status_code == 200 and bot.name in listing.content.decode()
    assert "data-add-bot" not in listing.content.decode()
    detail = client.get(f"/channels/{bot.pk}/").content.decode()
    assert "data-pause" not in detail and "data-delete" not in detail
    assert add_bot(client, platform="telegram", token="123456:ANOTHER-telegram-x").status_code == 403
    assert client.post(f"/channels/{bot.pk}/pause").status_code == 403
    assert client.post(f"/channels/{bot.pk}/", {"name": "Hijacked"}).status_code == 403
    assert client.post(f"/channels/{bot.pk}/delete").status_code == 403
    page = client.get(f"/agents/{shop.pk}/bindings/{binding.pk}/")
    assert page.status_code == 200 and "Save the binding" not in page.content.decode()
    changed = client.post(f"/agents/{shop.pk}/bindings/{binding.pk}/", {
        "extra_prompt": "x", "channel_tools_limit": "20", "footer_every_n": "10"})
    assert changed.status_code == 403
    bot.refresh_from_db()
    binding.refresh_from_db()
    assert ChannelBot.objects.count() == 1 and not bot.is_paused and bot.name == "Support"
    assert binding.extra_prompt == ""


def test_a_builder_cannot_change_a_bot_bound_to_an_agent_they_cannot_edit(client_as, org, owner, builder):
    private = factories.published_agent(org, owner, name="Owner's")
    owner_client = client_as(owner, org)
    add_bot(owner_client, platform="telegram", token="123456:ABCDEFGHIJ-telegram")
    bot = ChannelBot.objects.get()
    bound(owner_client, private, bot)
    client = client_as(builder, org)
    assert client.post(f"/channels/{bot.pk}/pause").status_code == 403
    bot.refresh_from_db()
    assert not bot.is_paused


def test_an_outsider_gets_404_for_another_organizations_bot_and_binding(
        client_as, org, builder, shop, outsider, outsider_org):
    add_bot(client_as(builder, org), platform="telegram", token="123456:ABCDEFGHIJ-telegram")
    bot = ChannelBot.objects.get()
    binding = bound(client_as(builder, org), shop, bot)
    client = client_as(outsider, outsider_org)
    assert bot.name not in client.get("/channels/").content.decode()
    assert client.get(f"/channels/{bot.pk}/").status_code == 404
    assert client.post(f"/channels/{bot.pk}/pause").status_code == 404
    assert client.post(f"/channels/{bot.pk}/delete").status_code == 404
    assert client.get(f"/agents/{shop.pk}/bindings/{binding.pk}/").status_code == 404
    assert client.post(f"/agents/{shop.pk}/bindings/{binding.pk}/", {"extra_prompt": "x"}).status_code == 404
    bot.refresh_from_db()
    assert ChannelBot.objects.filter(pk=bot.pk).exists() and not bot.is_paused


def test_a_viewer_can_neither_resume_switch_nor_register_a_webhook(client_as, org, builder, viewer, fake_telegram):
    admin_client = client_as(builder, org)
    add_bot(admin_client, platform="telegram", transport="polling", token=fake_telegram.token,
            api_base_url=fake_telegram.url)
    bot = ChannelBot.objects.get()
    admin_client.post(f"/channels/{bot.pk}/pause")
    client = client_as(viewer, org)
    for action in ("resume", "register-webhook", "use-polling"):
        assert client.post(f"/channels/{bot.pk}/{action}").status_code == 403, action
    assert client.post(f"/channels/{bot.pk}/", {"name": "Support", "token": "123456:STOLEN-token-x"}
                       ).status_code == 403
    bot.refresh_from_db()
    assert bot.is_paused and bot.transport == "polling"
    assert services.reveal_credentials(bot) == {"token": fake_telegram.token}
    assert fake_telegram.calls == [] and fake_telegram.webhook == {}
    assert not AuditEvent.objects.filter(organization=org, actor=viewer).exclude(action="signin.succeeded").exists()


def test_an_outsider_gets_404_from_every_bot_action_and_nothing_happens(
        client_as, org, builder, outsider, outsider_org, fake_telegram):
    add_bot(client_as(builder, org), platform="telegram", transport="polling", token=fake_telegram.token,
            api_base_url=fake_telegram.url)
    bot = ChannelBot.objects.get()
    client = client_as(outsider, outsider_org)
    for action in ("pause", "resume", "register-webhook", "use-polling", "delete", "no-such-action"):
        assert client.post(f"/channels/{bot.pk}/{action}").status_code == 404, action
    assert client.post(f"/channels/{bot.pk}/", {"name": "Hijacked", "token": "123456:STOLEN-token-x"}
                       ).status_code == 404
    bot.refresh_from_db()
    assert (bot.name, bot.transport, bot.is_paused) == ("Support", "polling", False)
    assert services.reveal_credentials(bot) == {"token": fake_telegram.token}
    assert fake_telegram.calls == []
    assert not AuditEvent.objects.filter(actor=outsider).exclude(action="signin.succeeded").exists()


def test_a_binding_is_reached_only_through_its_own_agent(
        client_as, org, builder, shop, outsider, outsider_org):
    client = client_as(builder, org)
    add_bot(client, platform="telegram", token="123456:ABCDEFGHIJ-telegram")
    binding = bound(client, shop, ChannelBot.objects.get())
    other = factories.published_agent(org, builder, name="Other")
    assert client.get(f"/agents/{other.pk}/bindings/{binding.pk}/").status_code == 404
    assert client.post(f"/agents/{other.pk}/bindings/{binding.pk}/", {
        "extra_prompt": "moved", "channel_tools_limit": "20", "footer_every_n": "10"}).status_code == 404
    foreign = factories.published_agent(outsider_org, outsider, name="Foreign")
    outsider_client = client_as(outsider, outsider_org)
    assert outsider_client.get(f"/agents/{foreign.pk}/bindings/{binding.pk}/").status_code == 404
    assert outsider_client.post(f"/agents/{foreign.pk}/bindings/{binding.pk}/", {
        "extra_prompt": "moved", "channel_tools_limit": "20", "footer_every_n": "10"}).status_code == 404
    binding.refresh_from_db()
    assert binding.extra_prompt == "" and binding.agent_id == shop.pk


def test_a_bot_bound_to_a_private_agent_does_not_name_it_to_who_cannot_see_it(client_as, org, owner, viewer):
    from agents.models import Agent

    secret_agent = factories.published_agent(org, owner, name="Payroll Whisperer")
    Agent.objects.filter(pk=secret_agent.pk).update(visibility="private")
    owner_client = client_as(owner, org)
    add_bot(owner_client, platform="telegram", token="123456:ABCDEFGHIJ-telegram")
    bot = ChannelBot.objects.get()
    binding = bound(owner_client, secret_agent, bot)
    assert "Payroll Whisperer" in owner_client.get("/channels/").content.decode()
    client = client_as(viewer, org)
    listing = client.get("/channels/").content.decode()
    detail = client.get(f"/channels/{bot.pk}/").content.decode()
    for page in (listing, detail):
        assert "Support" in page and "data-bound-hidden" in page
        assert "Payroll Whisperer" not in page and str(binding.pk) not in page and str(secret_agent.pk) not in page
    assert client.get(f"/agents/{secret_agent.pk}/bindings/{binding.pk}/").status_code == 404


def test_the_channels_list_does_not_grow_its_queries_with_its_bots(client_as, org, builder, shop):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from agents.models import Agent

    client = client_as(builder, org)

    def grow(n):
        for _ in range(n):
            add_bot(client, platform="telegram", token="123456:ABCDEFGHIJ-telegram")
            bot = ChannelBot.objects.order_by("-created_at").first()
            agent = factories.published_agent(org, builder, name=f"Agent {ChannelBot.objects.count()}")
            bound(client, agent, bot)
            Agent.objects.filter(pk=agent.pk).update(visibility="private")

    def queries():
        with CaptureQueriesContext(connection) as captured:
            assert client.get("/channels/").status_code == 200
        return len(captured)

    grow(2)
    few = queries()
    grow(5)
    assert queries() == few


def test_the_speech_to_text_choice_is_stored_shown_cleared_and_checked(client_as, org, builder):
    client = client_as(builder, org)
    refused = add_bot(client, platform="telegram", token="123456:ABCDEFGHIJ-telegram", stt="openai:not-a-model")
    assert refused.status_code == 422 and not ChannelBot.objects.exists()
    assert "123456:ABCDEFGHIJ-telegram" not in refused.content.decode()
    assert add_bot(client, platform="telegram", token="123456:ABCDEFGHIJ-telegram", stt="openai:whisper-1"
                   ).status_code == 302
    bot = ChannelBot.objects.get()
    assert (bot.stt_provider, bot.stt_model) == ("openai", "whisper-1")
    page = client.get(f"/channels/{bot.pk}/").content.decode()
    assert '<option value="openai:whisper-1" selected>' in page
    form = {"name": "Support", "api_base_url": "", "token": "", "stt": "", "mode": "open", "rate_limit_rpm": "10"}
    assert client.post(f"/channels/{bot.pk}/", form).status_code == 302
    bot.refresh_from_db()
    assert (bot.stt_provider, bot.stt_model) == ("", "")
    assert client.post(f"/channels/{bot.pk}/", {**form, "stt": "nobody:whisper"}).status_code == 422
    bot.refresh_from_db()
    assert (bot.stt_provider, bot.stt_model) == ("", "")


def test_a_mattermost_webhook_bot_without_its_token_says_so_and_switches_transport(client_as, org, builder):
    client = client_as(builder, org)
    add_bot(client, platform="mattermost", token="mattermost-bot-token-123456", api_base_url="https://chat.example.com")
    bot = ChannelBot.objects.get()
    page = client.get(f"/channels/{bot.pk}/").content.decode()
    assert "data-bot-warning" in page and "No outgoing-webhook token" in page
    assert f"{FRONTEND}/api/v1/mattermost/{bot.pk}/webhook" in page
    assert client.post(f"/channels/{bot.pk}/use-polling").status_code == 302
    bot.refresh_from_db()
    assert bot.transport == "polling"
    page = client.get(f"/channels/{bot.pk}/").content.decode()
    assert "data-bot-warning" not in page and "data-register-webhook" in page
    assert client.post(f"/channels/{bot.pk}/register-webhook").status_code == 302
    bot.refresh_from_db()
    assert bot.transport == "webhook"
    # Mattermost generates its own webhook token: nothing is minted here, the URL to paste is shown.
    assert services.reveal_credentials(bot) == {"token": "mattermost-bot-token-123456"}
    assert f"paste {FRONTEND}/api/v1/mattermost/{bot.pk}/webhook" in client.get(f"/channels/{bot.pk}/"
                                                                                ).content.decode()
    actions = list(AuditEvent.objects.filter(organization=org, action="channelbot.transport")
                   .order_by("created_at").values_list("details__transport", flat=True))
    assert actions == ["polling", "webhook"]


def test_switching_a_slack_bot_to_socket_mode_changes_its_manifest(client_as, org, builder, fake_slack):
    client = client_as(builder, org)
    bot = slack_bot(client, fake_slack)
    assert client.post(f"/channels/{bot.pk}/use-polling").status_code == 302
    page = client.get(f"/channels/{bot.pk}/").content.decode()
    manifest = page.split("data-manifest>", 1)[1].split("</pre>", 1)[0]
    assert "socket_mode_enabled: true" in manifest and "request_url" not in manifest
    assert "data-events-url" not in page
    assert "Socket Mode needs the app-level token" in page


def test_the_workspace_scope_shows_only_for_an_agent_that_keeps_files(client_as, org, builder, shop):
    client = client_as(builder, org)
    add_bot(client, platform="telegram", token="123456:ABCDEFGHIJ-telegram")
    add_bot(client, platform="telegram", token="654321:ABCDEFGHIJ-telegram", name="Files bot")
    plain = bound(client, shop, ChannelBot.objects.get(name="Support"))
    files_agent = factories.published_agent(org, builder, name="Files",
                                            capabilities=[{"id": "sandbox", "config": {"session_scope": "user"}}])
    with_files = bound(client, files_agent, ChannelBot.objects.get(name="Files bot"))
    page = client.get(f"/agents/{files_agent.pk}/bindings/{with_files.pk}/").content.decode()
    assert "data-workspace-scope" in page and "As the agent's spec says (user)" in page
    assert "passes 80%" in page
    page = client.get(f"/agents/{shop.pk}/bindings/{plain.pk}/").content.decode()
    assert "data-workspace-scope" not in page
    form = {"environment": "production", "extra_prompt": "", "channel_tools_limit": "20",
            "footer_mode": "near_limit", "footer_every_n": "10"}
    assert client.post(f"/agents/{files_agent.pk}/bindings/{with_files.pk}/",
                       {**form, "workspace_scope": "channel"}).status_code == 302
    with_files.refresh_from_db()
    assert with_files.workspace_scope == "channel"
    # A form without the control (its agent keeps no files) leaves a stored scope alone, and shows it to clear.
    Binding.objects.filter(pk=plain.pk).update(workspace_scope="agent")
    assert client.post(f"/agents/{shop.pk}/bindings/{plain.pk}/", form).status_code == 302
    plain.refresh_from_db()
    assert plain.workspace_scope == "agent"
    page = client.get(f"/agents/{shop.pk}/bindings/{plain.pk}/").content.decode()
    assert "data-workspace-scope" in page and "data-scope-unused" in page


def test_each_channel_tool_shows_the_description_the_model_reads_without_its_markup(client_as, org, builder, shop):
    from capabilities.base import function_toolset
    from capabilities.channel_tools.capability import FUNCTIONS

    client = client_as(builder, org)
    add_bot(client, platform="mattermost", token="mattermost-bot-token-123456", api_base_url="https://chat.example.com")
    binding = bound(client, shop, ChannelBot.objects.get())
    page = client.get(f"/agents/{shop.pk}/bindings/{binding.pk}/").content.decode()
    sent = function_toolset([FUNCTIONS["list_channel_members"]]).tools["list_channel_members"]
    assert "<summary>" in sent.description  # what the model reads carries markup a person should not see
    doc = page.split('data-tool-doc="list_channel_members">', 1)[1].split("</pre>", 1)[0]
    assert "&lt;summary&gt;" not in doc and "&lt;returns&gt;" not in doc and "&lt;description&gt;" not in doc
    summary = sent.description.split("<summary>", 1)[1].split("</summary>", 1)[0]
    returns = sent.description.split("<description>", 1)[1].split("</description>", 1)[0]
    from django.utils.html import escape

    assert escape(summary) in doc and escape(returns) in doc
    params = page.split('data-tool-params="list_channel_members">', 1)[1].split("</dl>", 1)[0]
    limit_doc = sent.function_schema.json_schema["properties"]["limit"]["description"]
    assert "limit" in params and escape(limit_doc) in params


def test_a_telegram_bot_added_in_webhook_mode_is_told_to_register_and_the_button_keeps_its_secret(
        client_as, org, builder, fake_telegram):
    client = client_as(builder, org)
    response = add_bot(client, platform="telegram", token=fake_telegram.token, api_base_url=fake_telegram.url)
    bot = ChannelBot.objects.get()
    minted = services.reveal_credentials(bot)["webhook_secret"]
    page = client.get(response["Location"]).content.decode()
    assert "Next: Register the webhook" in page and minted not in page
    assert fake_telegram.calls == []
    assert client.post(f"/channels/{bot.pk}/register-webhook").status_code == 302
    # Already in webhook mode: the secret Telegram now holds is the one minted at creation.
    assert services.reveal_credentials(bot)["webhook_secret"] == minted
    assert fake_telegram.webhook["secret_token"] == minted
    assert fake_telegram.webhook["url"] == f"{FRONTEND}/api/v1/telegram/{bot.pk}/webhook"
    bot.refresh_from_db()
    assert (bot.connection_state, bot.connection_reason) == ("idle", "")


def test_the_slack_manifest_asks_for_the_scope_of_every_method_the_adapter_calls():
    import re
    from pathlib import Path

    from console.channels import SLACK_METHOD_SCOPES, SLACK_SCOPES, slack_manifest

    root = Path(__file__).resolve().parents[2]
    source = "\n".join(p.read_text() for p in (root / "channelbots" / "slack").rglob("*.py"))
    called = set(re.findall(r'_call\(\s*"([a-z]+\.[A-Za-z]+)"', source))
    called |= set(re.findall(r"\.(files_upload_v2)\(", source))
    assert {"auth.test", "chat.postMessage", "conversations.members", "files_upload_v2"} <= called  # the scan reads
    assert called <= set(SLACK_METHOD_SCOPES), called - set(SLACK_METHOD_SCOPES)
    manifest = slack_manifest(None, socket_mode=True)
    asked = set(re.findall(r"^      - ([a-z_]+:[a-z_]+)$", manifest, re.M))
    needed = {scope for scopes in SLACK_METHOD_SCOPES.values() for scope in scopes}
    assert needed <= asked, needed - asked
    # Only what something uses: every scope asked for is needed by a call, a download or an event.
    assert asked == needed | {"files:read", "app_mentions:read"} == {scope for scope, _why in SLACK_SCOPES}


def test_the_management_command_registers_through_the_same_service_and_says_why_it_fails(
        client_as, org, owner, builder, fake_telegram):
    from io import StringIO

    from django.core.management import CommandError, call_command

    client = client_as(builder, org)
    add_bot(client, platform="telegram", transport="polling", token=fake_telegram.token,
            api_base_url=fake_telegram.url, name="Good")
    good = ChannelBot.objects.get(name="Good")
    out = StringIO()
    call_command("channel_webhook_register", "--bot-id", str(good.pk), stdout=out)
    assert out.getvalue().strip() == f"Telegram webhook registered: {FRONTEND}/api/v1/telegram/{good.pk}/webhook"
    assert fake_telegram.webhook["secret_token"] == services.reveal_credentials(good)["webhook_secret"]
    good.refresh_from_db()
    assert good.transport == "webhook" and good.platform_bot_username == "acme_bot"
    add_bot(client, platform="telegram", token="999999:WRONG-token-here", api_base_url=fake_telegram.url,
            name="Bad")
    bad = ChannelBot.objects.get(name="Bad")
    with pytest.raises(CommandError, match="Telegram refused the webhook"):
        call_command("channel_webhook_register", "--bot-id", str(bad.pk), stdout=StringIO())
    bad.refresh_from_db()
    assert bad.connection_state == "not_started" and "setWebhook failed" in bad.connection_reason


def test_the_key_that_pays_for_voice_notes_lists_this_organizations_keys_only_and_is_saved(client_as, org, builder):
    client = client_as(builder, org)
    ours = factories.model_profile(org, "openai", "gpt-4o", label="Team OpenAI", api_key="sk-team-key-0123456789")
    factories.model_profile(org, "openai", "gpt-4o", label="Keyless OpenAI")
    factories.model_profile(factories.organization(name="Other"), "openai", "gpt-4o", label="Their OpenAI",
                            api_key="sk-their-key-0123456789")
    assert add_bot(client, platform="telegram", token="123456:ABCDEFGHIJ-telegram", stt="openai:whisper-1",
                   stt_key=str(ours.pk)).status_code == 302
    bot = ChannelBot.objects.get()
    assert bot.stt_profile_id == ours.pk
    page = client.get(f"/channels/{bot.pk}/").content.decode()
    assert f'<option value="{ours.pk}" selected>Team OpenAI</option>' in page
    assert "Keyless OpenAI" not in page and "Their OpenAI" not in page


def test_the_server_field_says_the_operators_choice_about_private_servers(client_as, org, owner, builder, settings):
    """Spec: a self-hosted chat server on a private address (a Mattermost behind a VPN) is allowed on purpose —
    when the operator lists it. The form says so where the address is typed; the setting's name and entries only
    to those who may see deployment settings (owners, admins); a private server the operator has not listed is
    refused, and accepted once listed."""
    settings.CHANNEL_ALLOWED_PRIVATE_HOSTS = []
    owner_page = client_as(owner, org).get("/channels/").content.decode()
    assert "data-server-help" in owner_page and "A Mattermost server on a private or local address (behind a VPN" in owner_page
    assert "No private host is allowed now" in owner_page and "CHANNEL_ALLOWED_PRIVATE_HOSTS" in owner_page
    builder_client = client_as(builder, org)
    builder_page = builder_client.get("/channels/").content.decode()
    assert "(behind a VPN" in builder_page and "CHANNEL_ALLOWED_PRIVATE_HOSTS" not in builder_page

    token = "mattermost-bot-token-654321"
    refused = add_bot(builder_client, platform="mattermost", token=token, api_base_url="https://10.20.0.5",
                      webhook_secret="outgoing-hook-token-2")
    assert refused.status_code == 422 and ChannelBot.objects.count() == 0
    assert "private or local address" in refused.content.decode()

    settings.CHANNEL_ALLOWED_PRIVATE_HOSTS = ["10.20.0.5"]
    listed = client_as(owner, org).get("/channels/").content.decode()
    assert "Allowed private hosts now (CHANNEL_ALLOWED_PRIVATE_HOSTS): 10.20.0.5." in listed
    ok = add_bot(builder_client, platform="mattermost", token=token, api_base_url="https://10.20.0.5",
                 webhook_secret="outgoing-hook-token-2")
    assert ok.status_code == 302
    bot = ChannelBot.objects.get()
    assert bot.api_base_url == "https://10.20.0.5"
    detail = client_as(owner, org).get(f"/channels/{bot.pk}/").content.decode()
    assert 'id="e-server-help"' in detail and "10.20.0.5." in detail

"""A bot's server address (`api_base_url`) goes through the outbound guard: on create and on PATCH (also a name
that resolves to a private or metadata address), and again on every call the adapter makes — the bot's token
never reaches a refused address."""

from __future__ import annotations

import pytest

from channelbots.models import ChannelBot
from channelbots.platforms import PlatformError, client_for
from channelbots.services import reveal_credentials
from tests.fakes.mattermost import fake_mattermost  # noqa: F401  (fixture)
from tests.fakes.slack_api import fake_slack  # noqa: F401  (fixture)
from tests.fakes.telegram_api import fake_telegram  # noqa: F401  (fixture)

BOTS = "/api/v1/bots"
NAME = "chat.example.test"


def _create(client, platform: str, url: str):
    token = {"telegram": "123456:ABCDEF-telegram", "slack": "xoxb-test-token-0001"}.get(platform, "mm-bot-token-0001")
    return client.post(BOTS, {"platform": platform, "name": "Ops", "token": token, "api_base_url": url},
                       format="json")


@pytest.mark.parametrize("platform", ["mattermost", "telegram", "slack"])
@pytest.mark.parametrize(("answer", "word"), [(["10.0.0.9"], "CHANNEL_ALLOWED_PRIVATE_HOSTS"),
                                              (["93.184.216.34", "169.254.169.254"], "metadata"),
                                              (["fd00:ec2::254"], "metadata")])
def test_a_name_resolving_to_a_private_or_metadata_address_is_refused_on_create(api_as, org, builder, dns,
                                                                                platform, answer, word):
    dns[NAME] = answer
    response = _create(api_as(builder, org), platform, f"https://{NAME}")
    assert response.status_code == 422, response.content
    error = response.json()["error"]
    assert error["details"]["field"] == "api_base_url" and word in error["message"]
    assert not ChannelBot.objects.filter(organization=org).exists()


@pytest.mark.parametrize("hostile", ["http://169.254.169.254", "http://[::ffff:169.254.169.254]", "https://10.1.1.1",
                                     f"https://{NAME}:8443"])
def test_a_patch_to_a_refused_address_is_a_422_and_the_bot_keeps_its_server(api_as, org, builder, dns, hostile,
                                                                             outsider, outsider_org):
    dns[NAME] = ["93.184.216.34"]
    client = api_as(builder, org)
    created = _create(client, "mattermost", f"https://{NAME}")
    assert created.status_code == 201, created.content
    bot_id = created.json()["id"]
    dns[NAME] = ["192.168.7.7"]  # the name now answers a private address: the PATCH is checked like the create

    response = client.patch(f"{BOTS}/{bot_id}", {"api_base_url": hostile}, format="json")
    assert response.status_code == 422, response.content
    assert response.json()["error"]["details"]["field"] == "api_base_url"
    assert ChannelBot.objects.get(pk=bot_id).api_base_url == f"https://{NAME}"
    foreign = api_as(outsider, outsider_org).patch(f"{BOTS}/{bot_id}", {"api_base_url": "https://x.test"},
                                                   format="json")
    assert foreign.status_code == 404
    assert ChannelBot.objects.get(pk=bot_id).api_base_url == f"https://{NAME}"


def _saved_earlier(api_as, org, builder, platform: str, url: str) -> ChannelBot:
    """A bot whose address was accepted when it was saved (listed then, or an older release's rules)."""
    created = _create(api_as(builder, org), platform, url)
    assert created.status_code == 201, created.content
    return ChannelBot.objects.get(pk=created.json()["id"])


def test_a_mattermost_bot_whose_server_is_no_longer_allowed_never_sends_its_token(api_as, org, builder, settings,
                                                                                   fake_mattermost):  # noqa: F811
    bot = _saved_earlier(api_as, org, builder, "mattermost", fake_mattermost.url)
    settings.CHANNEL_ALLOWED_PRIVATE_HOSTS = []
    client = client_for(bot, reveal_credentials(bot))
    with pytest.raises(PlatformError, match="CHANNEL_ALLOWED_PRIVATE_HOSTS"):
        client.identity()
    with pytest.raises(PlatformError, match="refused"):
        client.websocket_url()
    assert fake_mattermost.calls == [] and fake_mattermost.auth_challenges == []


def test_a_telegram_bot_whose_name_now_resolves_to_the_metadata_address_is_refused_at_connect(
    api_as, org, builder, settings, dns, fake_telegram  # noqa: F811
):
    port = fake_telegram.url.rsplit(":", 1)[1]
    dns["tg.example.test"] = ["127.0.0.1"]
    settings.CHANNEL_ALLOWED_PRIVATE_HOSTS = ["tg.example.test"]
    bot = _saved_earlier(api_as, org, builder, "telegram", f"http://tg.example.test:{port}")
    client = client_for(bot, reveal_credentials(bot))
    # Listed by name: the call goes to the checked address, under the name.
    assert client.identity().username == fake_telegram.username
    assert fake_telegram.calls[-1][0] == "getMe"
    calls = len(fake_telegram.calls)

    dns["tg.example.test"] = ["169.254.169.254"]
    with pytest.raises(PlatformError, match="metadata"):
        client.post("42", "hello")
    assert len(fake_telegram.calls) == calls


def test_a_slack_bot_pointed_at_a_loopback_server_that_is_not_listed_is_refused_at_connect(
    api_as, org, builder, settings, fake_slack  # noqa: F811
):
    bot = _saved_earlier(api_as, org, builder, "slack", fake_slack.base_url)
    settings.CHANNEL_ALLOWED_PRIVATE_HOSTS = []
    with pytest.raises(PlatformError, match="CHANNEL_ALLOWED_PRIVATE_HOSTS"):
        client_for(bot, reveal_credentials(bot)).identity()
    assert fake_slack.calls == []

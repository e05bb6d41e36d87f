"""Channel bot fixtures: the test URLconf, bots registered through the services, fake platforms."""

from __future__ import annotations

import time

import pytest

from agenticos.models import Membership
from agenticos.tenancy import actor_for_membership
from channelbots import services
from tests import factories
from tests.fakes.slack_api import FakeSlack, SlackEventSender, fake_slack  # noqa: F401  (fixture)

FRONTEND = "https://app.example.com"
SLACK_TOKEN = "xoxb-test-token-0001"
SIGNING_SECRET = "8f742231b10e8888abcd99yyyzzz85a5"


@pytest.fixture(autouse=True)
def _channel_settings(settings, tmp_path):
    settings.ROOT_URLCONF = "tests.channelbots.urls"
    settings.FRONTEND_URL = FRONTEND
    settings.MEDIA_ROOT = str(tmp_path / "media")
    settings.CHANNELBOTS_SILENCE_SECONDS = 20
    settings.CHANNEL_ALLOWED_PRIVATE_HOSTS = ["127.0.0.1"]  # the fake platforms listen there


def actor(user, org):
    return actor_for_membership(Membership.objects.select_related("user", "organization").get(user=user, organization=org))


def slack_bot(org, user, *, fake=None, signing_secret: str | None = SIGNING_SECRET, **data):
    payload = {"platform": "slack", "name": "Support", "token": SLACK_TOKEN, **data}
    if signing_secret:
        payload["signing_secret"] = signing_secret
    if fake is not None:
        payload["api_base_url"] = fake.base_url
    return services.create_bot(actor=actor(user, org), data=payload)


def bind(agent, bot, user, org, **data):
    return services.create_binding(actor=actor(user, org), agent=agent, data={"bot_id": str(bot.pk), **data})


def wait_until(predicate, timeout: float = 15.0, interval: float = 0.05):
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached in time")
        time.sleep(interval)


@pytest.fixture
def agent(org, builder):
    return factories.published_agent(org, builder, name="Support Agent")


@pytest.fixture
def sender(client, org, builder, fake_slack):  # noqa: F811
    bot = slack_bot(org, builder, fake=fake_slack)
    return SlackEventSender(client, str(bot.pk), SIGNING_SECRET)

"""/link/<token>: the page a chat bot's `link` answer points at (channelbots.services.mint_link), and
Settings → Chat accounts, where a linked account is listed and disconnected."""

from __future__ import annotations

import datetime as dt

import pytest
from django.utils import timezone

from agenticos.models import AuditEvent, Membership
from agenticos.tenancy import actor_for_membership
from channelbots import services as bot_services
from channelbots.models import ChannelIdentity, LinkRequest
from tests import factories

pytestmark = pytest.mark.django_db
PASSWORD = "pw-correct-horse-9"


@pytest.fixture(autouse=True)
def _frontend(settings):
    settings.FRONTEND_URL = "https://agents.example.com"


def telegram_bot(org, user, name="Support bot"):
    actor = actor_for_membership(Membership.objects.select_related("user", "organization").get(user=user, organization=org))
    return bot_services.create_bot(actor=actor, data={"platform": "telegram", "name": name,
                                                      "token": "123456:ABCDEFGHIJ-telegram-token"})


def minted(org, user, *, account_id="4242", display_name="Ana on Telegram"):
    """(identity, path) as the bot's DM answer gives it: the URL mint_link builds, reduced to its path."""
    bot = telegram_bot(org, user)
    identity = bot_services.identity_for(bot, workspace="", account_id=account_id, display_name=display_name)
    url = bot_services.mint_link(identity, bot)
    assert url.startswith("https://agents.example.com/link/")
    return identity, url.removeprefix("https://agents.example.com")


def test_a_signed_out_visitor_is_sent_to_sign_in_and_back(client, org, builder, member):
    _identity, path = minted(org, builder)
    response = client.get(path)
    assert response.status_code == 302 and response["Location"] == f"/login/?next={path}"
    member.set_password(PASSWORD)
    member.save()
    signed_in = client.post(response["Location"], {"username": member.email, "password": PASSWORD})
    assert signed_in.status_code == 302 and signed_in["Location"] == path
    assert 'data-link-confirm' in client.get(path).content.decode()


def test_a_member_sees_which_account_is_linked_and_opening_it_uses_nothing(client_as, org, builder, member):
    identity, path = minted(org, builder)
    client = client_as(member, org)
    for _ in range(2):
        page = client.get(path).content.decode()
        account = page.split("data-link-account", 1)[1].split("</dl>", 1)[0]
        assert "Telegram" in account and "Ana on Telegram" in account and "4242" in account
        assert member.email in account
        assert "The bot Support bot asks to link this chat account to you" in page
        assert "Link this chat account</button>" in page
    assert LinkRequest.objects.get(identity=identity).used_at is None
    identity.refresh_from_db()
    assert identity.user is None


def test_confirming_links_the_account_once_and_lists_it_in_settings(client_as, org, builder, member):
    identity, path = minted(org, builder)
    client = client_as(member, org)
    response = client.post(path)
    assert response.status_code == 302 and response["Location"] == "/settings/chat-accounts/"
    identity.refresh_from_db()
    assert identity.user == member and identity.linked_at is not None
    assert AuditEvent.objects.filter(organization=org, action="chataccount.link", actor=member).count() == 1
    accounts = client.get("/settings/chat-accounts/").content.decode()
    assert "is linked to you" in accounts  # the flash
    assert f'data-chat-account="{identity.pk}"' in accounts and "Ana on Telegram" in accounts
    # Used: the page says so in words, and a second confirmation changes nothing.
    again = client.get(path)
    assert again.status_code == 404 and "data-link-invalid" in again.content.decode()
    assert "unknown, already used or expired" in again.content.decode()
    assert client.post(path).status_code == 404


@pytest.mark.parametrize("spoil", ["expired", "retired", "unknown"])
def test_an_expired_retired_or_unknown_link_shows_a_readable_page(client_as, org, builder, member, spoil):
    identity, path = minted(org, builder)
    if spoil == "expired":
        LinkRequest.objects.update(expires_at=timezone.now() - dt.timedelta(seconds=1))
    elif spoil == "retired":
        bot_services.mint_link(identity, identity_bot(identity))  # a newer link retires the older one
    else:
        path = "/link/not-a-token-anyone-minted"
    client = client_as(member, org)
    response = client.get(path)
    page = response.content.decode()
    assert response.status_code == 404 and "data-link-invalid" in page
    assert "Send the bot the word link again" in page and "<form method=\"post\" data-link-confirm" not in page
    assert client.post(path).status_code == 404
    identity.refresh_from_db()
    assert identity.user is None


def identity_bot(identity):
    return LinkRequest.objects.select_related("bot").get(identity=identity, retired=False).bot


def test_a_link_of_another_organizations_bot_reads_as_unknown_and_cannot_be_confirmed(
    client_as, org, member, outsider_org, outsider
):
    identity, path = minted(outsider_org, outsider)
    client = client_as(member, org)
    response = client.get(path)
    page = response.content.decode()
    assert response.status_code == 404 and "data-link-invalid" in page
    assert "Ana on Telegram" not in page and "Support bot" not in page
    assert client.post(path).status_code == 403
    identity.refresh_from_db()
    assert identity.user is None and LinkRequest.objects.get(identity=identity).used_at is None


def test_a_person_without_an_organization_is_not_shown_the_account(client, org, builder):
    _identity, path = minted(org, builder)
    stranger = factories.user()
    client.force_login(stranger)
    response = client.get(path)
    assert response.status_code == 403 and "Ana on Telegram" not in response.content.decode()


# ------------------------------------------------------------------ Settings → Chat accounts


def test_disconnecting_a_chat_account_keeps_the_row_and_clears_its_owner(client_as, org, builder, member):
    identity, path = minted(org, builder)
    client = client_as(member, org)
    client.post(path)
    response = client.post(f"/settings/chat-accounts/{identity.pk}/disconnect")
    assert response.status_code == 302
    identity.refresh_from_db()
    assert identity.user is None and identity.linked_at is None
    assert "data-empty-state" in client.get("/settings/chat-accounts/").content.decode()


def test_only_ones_own_chat_accounts_are_listed_or_disconnected(client_as, org, builder, member, outsider_org,
                                                                 outsider):
    mine, path = minted(org, builder, account_id="1", display_name="Mine")
    client_as(member, org).post(path)
    theirs = ChannelIdentity.objects.create(organization=outsider_org, platform="telegram", account_id="2",
                                            display_name="Theirs", user=outsider, linked_at=timezone.now())
    colleague = ChannelIdentity.objects.create(organization=org, platform="telegram", account_id="3",
                                               display_name="Colleague", user=builder, linked_at=timezone.now())
    client = client_as(member, org)
    page = client.get("/settings/chat-accounts/").content.decode()
    assert "Mine" in page and "Theirs" not in page and "Colleague" not in page
    assert client.post(f"/settings/chat-accounts/{theirs.pk}/disconnect").status_code == 404
    assert client.post(f"/settings/chat-accounts/{colleague.pk}/disconnect").status_code == 404
    assert client.get(f"/settings/chat-accounts/{mine.pk}/disconnect").status_code == 405
    theirs.refresh_from_db()
    colleague.refresh_from_db()
    assert theirs.user == outsider and colleague.user == builder


def test_the_chat_accounts_page_does_not_grow_its_queries_with_its_rows(client_as, org, member):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    client = client_as(member, org)

    def grow(start, n):
        for i in range(start, start + n):
            ChannelIdentity.objects.create(organization=org, platform="slack", workspace="T1", account_id=f"U{i}",
                                           display_name=f"Account {i}", user=member, linked_at=timezone.now())

    def count() -> int:
        with CaptureQueriesContext(connection) as captured:
            assert client.get("/settings/chat-accounts/").status_code == 200
        return len(captured)

    grow(0, 2)
    few = count()
    grow(2, 8)
    assert count() == few

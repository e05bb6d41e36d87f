"""The list of console pages the browser passes walk (tests/console/console_pages.py) is the console's routes: each
route is a page or set aside with a reason, and each page answers a signed-in owner with HTML."""

from __future__ import annotations

import pytest
from django.test import Client

from tests.console.console_pages import NOT_PAGES, SIGNED_OUT, console_route_names, pages, seed

pytestmark = pytest.mark.django_db


def test_every_route_set_aside_is_a_console_route():
    assert set(NOT_PAGES) - console_route_names() == set()
    assert set(SIGNED_OUT) - console_route_names() == set()


def test_every_console_page_answers_with_html(client_as, org, owner, settings, tmp_path):
    settings.MEDIA_ROOT = str(tmp_path / "media")
    world = seed(org, owner)
    signed_in, signed_out = client_as(owner, org), Client()
    answers = {}
    for page in pages(world):
        response = (signed_out if page.name in SIGNED_OUT else signed_in).get(page.path)
        answers[page.name] = (response.status_code, response.get("Content-Type", "").split(";")[0])
    expected_missing = {"console:invitation", "console:link-chat-account"}  # unknown tokens: the branded 404 page
    assert {name: answer for name, answer in answers.items() if name not in expected_missing
            and answer != (200, "text/html")} == {}
    assert len(answers) > 50


def test_every_date_on_every_page_is_in_the_one_format(client_as, org, owner, settings, tmp_path):
    """Issue 45: one date format — relative in lists, the person's locale and time zone in details — drawn by the
    console's script from `<time data-when>`; a date written out anywhere else is a second format."""
    import re
    from html.parser import HTMLParser

    from agenticos.models import Secret
    from channelbots.models import ChannelIdentity
    from identity.models import ScimToken
    from tests import factories

    settings.MEDIA_ROOT = str(tmp_path / "media")
    world = seed(org, owner)
    # What the settings pages list with a date of its own.
    factories.secret(org, "rotated", "sk-rotated-value-1234")
    Secret.objects.filter(organization=org, name="rotated").update(rotated_at="2026-01-02T03:04:05Z")
    ChannelIdentity.objects.create(organization=org, platform="slack", account_id="U1", workspace="T1", user=owner,
                                   linked_at="2026-01-02T03:04:05Z")
    ScimToken.objects.create(organization=org, name="Okta", prefix="scim_abcdef", token_hash="0" * 64,
                             created_by=owner, last_used_at="2026-01-02T03:04:05Z")
    date = re.compile(r"(?<![\w.-])\d{4}-\d{2}-\d{2}(?![\w-])")

    class Outside(HTMLParser):
        def __init__(self) -> None:
            super().__init__()
            self.inside: list[str] = []
            self.found: list[str] = []

        def handle_starttag(self, tag, attrs):
            if tag in ("time", "script", "style", "code", "pre", "textarea", "template"):
                self.inside.append(tag)

        def handle_endtag(self, tag):
            if self.inside and self.inside[-1] == tag:
                self.inside.pop()

        def handle_data(self, data):
            if not self.inside:
                self.found += date.findall(data)

    signed_in = client_as(owner, org)
    written = {}
    for page in pages(world):
        if page.name in SIGNED_OUT:
            continue
        response = signed_in.get(page.path)
        if response.status_code != 200:
            continue
        parser = Outside()
        parser.feed(response.content.decode())
        if parser.found:
            written[page.name] = parser.found
    assert written == {}

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

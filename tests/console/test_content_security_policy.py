"""Every console page is sent a Content-Security-Policy that admits script only from this server's files, and no
page carries what that policy would refuse (an inline <script>, a handler in the markup). The pages are found the
way a person finds them: from the home page, following every link and frame a member and an owner are shown, with
an agent that has a conversation, a trigger and a widget and a hosted page. The public hosted page is held to the
same policy; a drawing's frame (/apps/frame) brings a policy of its own that the page's does not replace."""

from __future__ import annotations

import re
from collections import deque
from urllib.parse import urlsplit

import pytest

from agenticos.models import Membership
from agenticos.tenancy import actor_for_membership
from tests import factories
from tests.console.conftest import make_turn
from triggers import services as trigger_services

pytestmark = pytest.mark.django_db

LINK = re.compile(r'(?:href|src|data-preview-src)="(/[^"#?]*)')
# Where a link leaves the console's pages: files, downloads, the API, the admin, signing out.
NOT_PAGES = ("/static/", "/api/", "/media/", "/admin/", "/logout", "/apps/lib/", "/apps/frame")
INLINE_SCRIPT = re.compile(r"<script\b(?![^>]*\bsrc=)(?![^>]*type=\"application/json\")[^>]*>", re.IGNORECASE)
HANDLER = re.compile(r"<[a-z][^>]*\son[a-z]+\s*=", re.IGNORECASE)


def directives(header: str) -> dict[str, list[str]]:
    out = {}
    for part in header.split(";"):
        words = part.split()
        if words:
            out[words[0]] = words[1:]
    return out


def crawl(client, limit: int = 300) -> dict[str, object]:
    """path → response of every HTML page reachable from the home page (same origin, GET)."""
    pages: dict[str, object] = {}
    queue, seen = deque(["/"]), {"/"}
    while queue and len(pages) < limit:
        path = queue.popleft()
        response = client.get(path)
        if response.status_code != 200 or not response["Content-Type"].startswith("text/html"):
            continue
        pages[path] = response
        for link in LINK.findall(response.content.decode()):
            target = urlsplit(link).path
            if target not in seen and not target.startswith(NOT_PAGES):
                seen.add(target)
                queue.append(target)
    return pages


def assert_strict(path: str, response) -> None:
    assert "Content-Security-Policy" in response, path
    policy = directives(response["Content-Security-Policy"])
    assert policy["script-src"] == ["'self'"], (path, policy)
    assert policy["default-src"] == ["'self'"] and policy["object-src"] == ["'none'"], path
    assert "'unsafe-inline'" not in policy["script-src"] and "'unsafe-eval'" not in policy["script-src"], path
    html = response.content.decode()
    assert not INLINE_SCRIPT.search(html), (path, INLINE_SCRIPT.search(html))
    assert not HANDLER.search(html), (path, HANDLER.search(html).group(0))


@pytest.fixture
def furnished(org, owner, agent):
    """An agent with what its pages show: a conversation, a trigger, a widget and a hosted page."""
    make_turn(org, owner, agent)
    actor = actor_for_membership(Membership.objects.select_related("user", "organization").get(user=owner))
    trigger_services.create_trigger(actor=actor, agent=agent, data={
        "name": "Nightly", "kind": "schedule", "prompt": "Write the report.", "cron": "0 9 * * *", "timezone": "UTC"})
    widget = factories.embed(agent, kind="widget", created_by=owner)
    page = factories.embed(agent, kind="page", created_by=owner)
    return agent, widget, page


@pytest.mark.parametrize("role", ["owner", "member"])
def test_every_console_page_a_person_can_open_sends_the_strict_policy(client_as, org, owner, furnished, role):
    agent, widget, page = furnished
    person = owner if role == "owner" else factories.member(org, role)
    pages = crawl(client_as(person, org))
    for path, response in pages.items():
        assert_strict(path, response)
    # The walk reached the pages this policy was written for (not a login page over and over).
    reached = set(pages)
    assert {"/", "/chat/", f"/agents/{agent.pk}/", "/channels/"} <= reached, sorted(reached)
    if role == "owner":
        assert {f"/agents/{agent.pk}/triggers/", f"/agents/{agent.pk}/embeds/{widget.pk}/",
                f"/agents/{agent.pk}/embeds/{widget.pk}/preview/",
                f"/agents/{agent.pk}/embeds/{page.pk}/preview/"} <= reached, sorted(reached)
        assert len(pages) >= 30, sorted(reached)


def test_the_public_hosted_page_and_the_sign_in_page_send_it_too(client, owner, agent):
    page = factories.embed(agent, kind="page", created_by=owner)
    for path in (f"/e/{page.public_key}", "/login/"):
        response = client.get(path)
        assert response.status_code == 200, path
        assert_strict(path, response)


def test_a_drawings_frame_keeps_its_own_sandboxed_policy(client):
    response = client.get("/apps/frame")
    policy = directives(response["Content-Security-Policy"])
    assert policy["sandbox"] == ["allow-scripts"] and policy["connect-src"] == ["'none'"]
    assert "'unsafe-inline'" in policy["script-src"]  # a drawing's scripts and handlers run in the sandbox only
    assert "X-Frame-Options" not in response  # the website widget draws on its customers' pages

"""One navigation (issue 44 §9) for the weaker roles: every tab a person is shown on an agent's pages opens for
them — its page answers 200 and the section a tab's anchor names is on it — and the one they may not use (Test,
which needs edit access) is neither a tab nor a section of their page."""

from __future__ import annotations

import re
from urllib.parse import urlsplit

import pytest

from tests import factories

pytestmark = pytest.mark.django_db


def tab_links(html: str) -> dict[str, str]:
    bar = re.search(r"<nav [^>]*data-agent-tabs>(.*?)</nav>", html, re.S)
    assert bar is not None, "no agent tab bar"
    return {key: href.replace("&amp;", "&") for href, key in
            re.findall(r'<a href="([^"]+)"[^>]*data-agent-tab="([a-z]+)"', bar.group(1))}


@pytest.mark.parametrize("role", ["builder", "member", "viewer"])
def test_every_tab_a_weaker_role_is_shown_opens_for_them(client_as, org, owner, agent, role):
    person = factories.member(org, role)
    client = client_as(person, org)
    for start in (f"/agents/{agent.pk}/", f"/agents/{agent.pk}/triggers/", f"/agents/{agent.pk}/delegates/"):
        links = tab_links(client.get(start).content.decode())
        assert "test" not in links, (role, start)  # the test chat needs edit access: builders own theirs only
        for key, href in links.items():
            parts = urlsplit(href)
            response = client.get(parts.path + (f"?{parts.query}" if parts.query else ""))
            assert response.status_code == 200, (role, key, href)
            if parts.fragment:
                assert f'id="{parts.fragment}"' in response.content.decode(), (role, key, href)
        assert 'id="test-chat"' not in client.get(f"/agents/{agent.pk}/").content.decode()


def test_the_agents_owner_gets_the_test_tab_and_its_section(client_as, org, owner, agent):
    html = client_as(owner, org).get(f"/agents/{agent.pk}/").content.decode()
    assert tab_links(html)["test"].endswith("#test-chat") and 'id="test-chat"' in html

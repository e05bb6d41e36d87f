"""The everyday screens (issue 25): the branded 404 for console routes while /api/ keeps the JSON envelope,
the favicon, and — in a real browser at 1440 and 390 px — Usage, a run's page, API keys, the 404 page and
the navigation drawer, with no console error on any page."""

from __future__ import annotations

import uuid

import pytest

pytestmark = pytest.mark.django_db


def test_an_unknown_console_page_is_the_branded_404(client_as, org, owner):
    response = client_as(owner, org).get("/no-such-page/")
    page = response.content.decode()
    assert response.status_code == 404 and response["Content-Type"].startswith("text/html")
    assert 'data-error-page="404"' in page and "We could not find that page" in page
    assert 'class="sidenav"' in page  # signed in: the console around it
    assert "favicon.svg" in page and 'href="data:,"' not in page


def test_another_organizations_run_is_the_same_branded_404(client_as, outsider, outsider_org, org, owner, agent):
    from tests.console.conftest import make_turn

    _c, run = make_turn(org, owner, agent)
    for path in (f"/activity/runs/{run.pk}/", f"/activity/runs/{uuid.uuid4()}/"):
        response = client_as(outsider, outsider_org).get(path)
        assert response.status_code == 404 and 'data-error-page="404"' in response.content.decode()


def test_signed_out_the_404_offers_sign_in(client):
    response = client.get("/no-such-page/")
    assert response.status_code == 404 and "Sign in" in response.content.decode()


def test_api_paths_keep_the_json_envelope(client_as, org, owner):
    for path in ("/api/v1/no-such-thing", f"/api/v1/runs/{uuid.uuid4()}"):
        response = client_as(owner, org).get(path)
        assert response.status_code == 404 and response["Content-Type"].startswith("application/json")
        assert response.json()["error"]["code"] == "not_found"


def test_the_header_bell_counts_only_ones_own_unread_notifications(client_as, org, owner, member, outsider,
                                                                   outsider_org):
    from notifications.services import notify

    notify(organization=org, recipient=owner, kind="test", text="Enable web search?", link="/agents/")
    notify(organization=org, recipient=owner, kind="test", text="Another", link="/agents/")
    notify(organization=org, recipient=member, kind="test", text="Not yours")
    notify(organization=outsider_org, recipient=outsider, kind="test", text="Theirs")
    page = client_as(owner, org).get("/").content.decode()
    assert "data-notifications-bell" in page and 'data-unread-count>2<' in page
    outsider_page = client_as(outsider, outsider_org).get("/").content.decode()
    assert 'data-unread-count>1<' in outsider_page


def test_the_500_page_renders_without_a_request():
    from django.template import loader

    page = loader.get_template("500.html").render()
    assert 'data-error-page="500"' in page and "favicon.svg" in page


def test_the_favicon_is_a_real_svg(client):
    from django.contrib.staticfiles import finders

    path = finders.find("console/favicon.svg")
    assert path is not None
    with open(path, encoding="utf-8") as handle:
        assert handle.read().lstrip().startswith("<svg")

"""Notifications (API and console page) and the missing-capability card's actions: a non-editor asks the owner
(a notification opening the Toolbox), an editor enables it (published at once only from a clean draft by
someone who may publish). Outsiders see none of another organization's notifications; a viewer enables nothing."""

from __future__ import annotations

import pytest
from django.test import Client

from agenticos.models import AuditEvent, Membership
from agenticos.tenancy import SESSION_KEY, actor_for_membership
from agents import services as agent_services
from agents.models import Agent, AgentVersion
from notifications.models import Notification
from notifications.services import notify
from tests import factories

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _console_urls(settings):
    settings.ROOT_URLCONF = "tests.console.urls"


def actor_of(user, org):
    return actor_for_membership(Membership.objects.select_related("user", "organization").get(user=user,
                                                                                               organization=org))


def console(user, org) -> Client:
    client = Client()
    client.force_login(user)
    session = client.session
    session[SESSION_KEY] = str(org.pk)
    session.save()
    return client


@pytest.fixture
def agent(org, owner):
    return factories.published_agent(org, owner, name="Helper", capabilities=[{"id": "clock"}])


def enable_url(agent, cap="web_fetch"):
    return f"/api/v1/agents/{agent.pk}/capabilities/{cap}/enable"


def request_url(agent, cap="web_fetch"):
    return f"/api/v1/agents/{agent.pk}/capabilities/{cap}/request"


# ------------------------------------------------------------------ the list and reading


def test_i_see_my_notifications_of_this_organization_only(api_as, org, owner, outsider_org, outsider, member):
    mine = notify(organization=org, recipient=owner, kind="capability_request", text="Mine", link="/agents/")
    notify(organization=org, recipient=member, kind="capability_request", text="A colleague's")
    notify(organization=outsider_org, recipient=outsider, kind="capability_request", text="Foreign")
    body = api_as(owner, org).get("/api/v1/notifications").json()
    assert [n["id"] for n in body["results"]] == [str(mine.pk)]
    assert body["results"][0]["read_at"] is None and body["results"][0]["link"] == "/agents/"
    assert api_as(outsider, outsider_org).get("/api/v1/notifications").json()["results"][0]["text"] == "Foreign"


def test_marking_read_works_on_mine_and_is_a_404_for_anyone_elses(api_as, org, owner, outsider_org, outsider):
    mine = notify(organization=org, recipient=owner, kind="capability_request", text="Mine")
    foreign = notify(organization=outsider_org, recipient=outsider, kind="capability_request", text="Foreign")
    response = api_as(owner, org).post(f"/api/v1/notifications/{foreign.pk}/read")
    assert response.status_code == 404 and response.json()["error"]["code"] == "not_found"
    foreign.refresh_from_db()
    assert foreign.read_at is None
    assert api_as(outsider, outsider_org).post(f"/api/v1/notifications/{mine.pk}/read").status_code == 404
    assert api_as(owner, org).post(f"/api/v1/notifications/{mine.pk}/read").json()["read_at"]
    assert api_as(owner, org).get("/api/v1/notifications?unread=1").json()["results"] == []


def test_mark_all_read_leaves_other_peoples_unread(api_as, org, owner, member):
    notify(organization=org, recipient=owner, kind="capability_request", text="Mine")
    theirs = notify(organization=org, recipient=member, kind="capability_request", text="Theirs")
    assert api_as(owner, org).post("/api/v1/notifications/read").json() == {"unread": 0}
    theirs.refresh_from_db()
    assert theirs.read_at is None


def test_a_notification_links_inside_the_console_only(org, owner):
    for link in ("https://evil.example/", "//evil.example/", "/\\evil.example/"):
        with pytest.raises(ValueError):
            notify(organization=org, recipient=owner, kind="capability_request", text="x", link=link)
    assert not Notification.objects.exists()


def test_the_page_and_the_bell_show_mine_and_never_an_outsiders(org, owner, outsider_org, outsider):
    from django.template import Context, Template
    from django.test import RequestFactory

    notify(organization=org, recipient=owner, kind="capability_request", text="Please enable Web pages",
           link="/agents/")
    page = console(outsider, outsider_org).get("/notifications/")
    assert page.status_code == 200 and b"Please enable Web pages" not in page.content
    mine = console(owner, org).get("/notifications/")
    assert b"Please enable Web pages" in mine.content

    request = RequestFactory().get("/")
    request.actor = actor_of(owner, org)
    bell = Template("{% load notifications %}{% notifications_bell %}").render(Context({"request": request}))
    assert 'data-unread-count>1<' in bell and 'href="/notifications/"' in bell
    request.actor = actor_of(outsider, outsider_org)
    bell = Template("{% load notifications %}{% notifications_bell %}").render(Context({"request": request}))
    assert "data-unread-count" not in bell


def test_opening_one_marks_it_read_and_follows_its_link(org, owner, outsider_org, outsider):
    found = notify(organization=org, recipient=owner, kind="capability_request", text="x", link="/agents/")
    response = console(outsider, outsider_org).post(f"/notifications/{found.pk}/open")
    assert response.status_code == 404
    found.refresh_from_db()
    assert found.read_at is None
    response = console(owner, org).post(f"/notifications/{found.pk}/open")
    assert response.status_code == 302 and response["Location"] == "/agents/"
    found.refresh_from_db()
    assert found.read_at is not None


# ------------------------------------------------------------------ the card: ask the owner


def test_a_member_asks_the_owner_who_gets_a_notification_opening_the_toolbox(api_as, org, owner, member, agent):
    response = api_as(member, org).post(request_url(agent), {"reason": "To read the page I linked."})
    assert response.status_code == 200, response.json()
    [notification] = Notification.objects.all()
    assert notification.recipient == owner and notification.organization == org
    assert notification.link == f"/agents/{agent.pk}/#cap-web_fetch"
    assert member.email in notification.text and "To read the page I linked." in notification.text
    # Asking again while the first is unread does not pile up copies.
    api_as(member, org).post(request_url(agent), {"reason": "Again."})
    assert Notification.objects.count() == 1
    assert AuditEvent.objects.filter(action="agent.capability_requested").count() == 1


def test_an_outsider_cannot_ask_about_another_organizations_agent(api_as, outsider_org, outsider, agent):
    response = api_as(outsider, outsider_org).post(request_url(agent), {"reason": "x"})
    assert response.status_code == 404
    assert not Notification.objects.exists()


def test_an_unknown_capability_is_a_404(api_as, org, member, agent):
    assert api_as(member, org).post(request_url(agent, "no_such_thing"), {}).status_code == 404
    assert api_as(member, org).post(request_url(agent, "channel_tools"), {}).status_code == 404  # not selectable
    assert not Notification.objects.exists()


# ------------------------------------------------------------------ the card: enable


def test_a_viewer_cannot_enable_from_the_card(api_as, org, viewer, agent):
    before = dict(agent.draft_spec)
    response = api_as(viewer, org).post(enable_url(agent))
    assert response.status_code == 403
    agent.refresh_from_db()
    assert agent.draft_spec == before
    assert AgentVersion.objects.filter(agent=agent).count() == 1


def test_a_member_cannot_enable_from_the_card_either(api_as, org, member, agent):
    assert api_as(member, org).post(enable_url(agent)).status_code == 403
    agent.refresh_from_db()
    assert "web_fetch" not in {b["id"] for b in agent.draft_spec["capabilities"]}


def test_the_owner_enables_it_on_a_clean_draft_and_it_is_published_at_once(api_as, org, owner, agent):
    response = api_as(owner, org).post(enable_url(agent))
    assert response.status_code == 200, response.json()
    assert response.json()["published_version"] == 2
    v2 = AgentVersion.objects.get(agent=agent, number=2)
    assert "web_fetch" in {b["id"] for b in v2.spec["capabilities"]}


def test_with_unpublished_changes_it_waits_in_the_draft(api_as, org, owner, agent):
    spec = dict(agent.draft_spec)
    spec["instructions"] = "Changed but not published."
    agent_services.update_agent(actor=actor_of(owner, org), agent=agent, spec=spec)
    response = api_as(owner, org).post(enable_url(agent))
    assert response.status_code == 200 and response.json()["published_version"] is None
    agent.refresh_from_db()
    assert "web_fetch" in {b["id"] for b in agent.draft_spec["capabilities"] if b.get("enabled", True)}
    assert not AgentVersion.objects.filter(agent=agent, number=2).exists()


def test_an_editor_who_may_not_publish_enables_it_in_the_draft_only(api_as, org, owner, agent):
    from governance.grants import share_agent

    editor = factories.member(org, "member")
    share_agent(actor=actor_of(owner, org), agent=agent, user_id=editor.pk, level="edit")
    response = api_as(editor, org).post(enable_url(agent))
    assert response.status_code == 200, response.json()
    assert response.json()["published_version"] is None
    assert not AgentVersion.objects.filter(agent=agent, number=2).exists()


def test_a_capability_that_would_not_publish_is_refused_and_nothing_is_saved(api_as, org, owner, agent):
    before = dict(Agent.objects.get(pk=agent.pk).draft_spec)
    response = api_as(owner, org).post(enable_url(agent, "memory_mem0"))  # needs a key: none bound
    assert response.status_code == 422, response.json()
    assert "Toolbox" in response.json()["error"]["message"]
    agent.refresh_from_db()
    assert agent.draft_spec == before
    assert AgentVersion.objects.filter(agent=agent).count() == 1


def test_an_outsider_cannot_enable_on_another_organizations_agent(api_as, outsider_org, outsider, agent):
    assert api_as(outsider, outsider_org).post(enable_url(agent)).status_code == 404
    agent.refresh_from_db()
    assert "web_fetch" not in {b["id"] for b in agent.draft_spec["capabilities"]}

"""One navigation (issue 44 §9): every page of an agent carries the same tab bar, its own tab marked; the home page
shows a new organization's first-run checklist, each step done by what the organization holds, gone once all are.
A weaker role sees the tabs without Test and no checklist; another organization's agent pages are 404."""

from __future__ import annotations

import re

import pytest

from agents.models import ModelProfile
from tests import factories
from tests.console.conftest import make_turn

pytestmark = pytest.mark.django_db

TABS = ["builder", "test", "toolbox", "versions", "availability", "triggers", "evals", "replays", "delegates", "activity"]


def tabs_of(html: str) -> tuple[list[str], list[str]]:
    """The tab keys of the page's agent tab bar, and which one says it is the current page."""
    bars = re.findall(r"<nav [^>]*data-agent-tabs>(.*?)</nav>", html, re.S)
    assert len(bars) == 1, f"{len(bars)} agent tab bars"
    links = re.findall(r"<a ([^>]*)>", bars[0])
    keys = [re.search(r'data-agent-tab="([a-z]+)"', a).group(1) for a in links]
    current = [re.search(r'data-agent-tab="([a-z]+)"', a).group(1) for a in links if 'aria-current="page"' in a]
    return keys, current


def agent_pages(agent) -> dict[str, str]:
    return {
        "builder": f"/agents/{agent.pk}/",
        "triggers": f"/agents/{agent.pk}/triggers/",
        "evals": f"/agents/{agent.pk}/evals/",
        "replays": f"/agents/{agent.pk}/replays/",
        "delegates": f"/agents/{agent.pk}/delegates/",
    }


def test_every_page_of_an_agent_has_the_same_tabs_with_its_own_marked(client_as, org, owner, agent):
    client = client_as(owner, org)
    for key, path in agent_pages(agent).items():
        response = client.get(path)
        assert response.status_code == 200, path
        keys, current = tabs_of(response.content.decode())
        assert keys == TABS, path
        assert current == [key], path


def test_the_tabs_link_to_the_agents_own_pages(client_as, org, owner, agent):
    html = client_as(owner, org).get(f"/agents/{agent.pk}/triggers/").content.decode()
    bar = re.search(r"<nav [^>]*data-agent-tabs>(.*?)</nav>", html, re.S).group(1)
    for href in (f"/agents/{agent.pk}/#toolbox", f"/agents/{agent.pk}/evals/", f"/agents/{agent.pk}/delegates/",
                 f"/activity/?agent={agent.pk}"):
        assert f'href="{href}"' in bar
    assert f"Pages of {agent.name}" in html


def test_an_embed_page_carries_the_tabs_on_availability(client_as, org, owner, agent):
    embed = factories.embed(agent, created_by=owner)
    keys, current = tabs_of(client_as(owner, org).get(f"/agents/{agent.pk}/embeds/{embed.pk}/").content.decode())
    assert keys == TABS and current == ["availability"]


def test_a_viewer_gets_the_tabs_without_test_and_an_outsider_gets_404(client_as, org, viewer, agent, outsider,
                                                                      outsider_org):
    viewing = client_as(viewer, org)
    stranger = client_as(outsider, outsider_org)
    for path in agent_pages(agent).values():
        keys, _current = tabs_of(viewing.get(path).content.decode())
        assert keys == [k for k in TABS if k != "test"], path
        assert stranger.get(path).status_code == 404, path


# ------------------------------------------------------------------ the first-run checklist


def steps(html: str) -> dict[str, bool]:
    return {key: done == "true" for key, done in
            re.findall(r'data-checklist-step="([a-z]+)" data-done="(true|false)"', html)}


def test_a_new_organization_sees_every_step_to_do_with_where_each_is_done(client_as):
    org = factories.organization(name="Fresh")
    owner = factories.member(org, "owner")
    factories.model_profile(org)  # the offline demo model is no connected model
    html = client_as(owner, org).get("/").content.decode()
    assert steps(html) == {"model": False, "agent": False, "knowledge": False, "try": False, "share": False}
    assert "0 of 5 done" in html
    for href in ("/settings/models/", "/agents/new", "/knowledge/", "/chat/", "/agents/"):
        assert f'href="{href}"' in html.split("data-first-run-checklist", 1)[1].split("</section>", 1)[0]


def test_each_step_is_done_by_what_the_organization_holds_and_the_list_goes_when_all_are(client_as, owner, org):
    client = client_as(owner, org)
    factories.model_profile(org, "openai", "gpt-4o-mini", api_key="sk-test-0000")
    factories.model_profile(org, "openai", "text-embedding-3-small", kind=ModelProfile.Kind.EMBEDDING)
    assert steps(client.get("/").content.decode())["model"] is True

    agent = factories.published_agent(org, owner, name="Shop")
    html = client.get("/").content.decode()
    assert steps(html)["agent"] is True and steps(html)["try"] is False
    assert f'href="/agents/{agent.pk}/#availability"' in html  # "put it somewhere" opens its Availability

    factories.document(factories.collection(org), "faq.txt", b"Opening hours: 9 to 5.")
    make_turn(org, owner, agent)
    html = client.get("/").content.decode()
    assert steps(html) == {"model": True, "agent": True, "knowledge": True, "try": True, "share": False}
    assert "4 of 5 done" in html

    factories.embed(agent, created_by=owner)
    assert "data-first-run-checklist" not in client.get("/").content.decode()


def test_the_platforms_own_agents_do_not_count_as_making_one(client_as, owner, org):
    from agents.models import Agent

    Agent.objects.create(organization=org, slug="architect", name="Architect", owner=owner)
    Agent.objects.create(organization=org, slug="tool-builder", name="Tool builder", owner=owner)
    assert steps(client_as(owner, org).get("/").content.decode())["agent"] is False


def test_someone_who_cannot_build_gets_no_checklist_and_another_organization_does_not_tick_ours(
        client_as, org, member, viewer, outsider, outsider_org, outsider_agent):
    for person in (member, viewer):
        assert "data-first-run-checklist" not in client_as(person, org).get("/").content.decode()
    factories.embed(outsider_agent, created_by=outsider)
    owner = factories.member(org, "owner")
    assert steps(client_as(owner, org).get("/").content.decode())["share"] is False

"""Giving custom tools, database connections and MCP tools to an agent by picking them (schema_forms pickers
and console/templates/console/_config_field.html), not by pasting ids into a JSON box: the picker lists only the
organization's own objects, the form a browser would post from it saves through the Builder's capability
route into the agent's draft (ids, per-tool approvals, allowed MCP tools), unticking everything saves an empty
choice, the 25-slot budget still refuses a publish, and without an organization the JSON box stays."""

from __future__ import annotations

from html.parser import HTMLParser

import pytest
from django.http import QueryDict
from django.template.loader import render_to_string

from agents.models import Agent
from capabilities import registry
from capabilities.models import DatabaseConnection, McpConnection
from console.schema_forms import config_from_post, fields_for
from tests import factories

pytestmark = pytest.mark.django_db


class _Form(HTMLParser):
    """The values a browser submits from rendered controls: checked boxes, selected options, hidden inputs."""

    def __init__(self) -> None:
        super().__init__()
        self.pairs: list[tuple[str, str]] = []
        self._select: str | None = None
        self._first: tuple[str, str] | None = None
        self._chosen = False

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "input" and a.get("name"):
            if a.get("type") == "checkbox":
                if "checked" in a:
                    self.pairs.append((a["name"], a.get("value") or "on"))
            else:
                self.pairs.append((a["name"], a.get("value") or ""))
        elif tag == "select":
            self._select, self._first, self._chosen = a.get("name"), None, False
        elif tag == "option" and self._select:
            value = a.get("value") or ""
            if self._first is None:
                self._first = (self._select, value)
            if "selected" in a:
                self.pairs.append((self._select, value))
                self._chosen = True

    def handle_endtag(self, tag):
        if tag == "select" and self._select:
            if not self._chosen and self._first:
                self.pairs.append(self._first)
            self._select = None


def schema(capability_id: str) -> dict:
    return next(c["config_schema"] for c in registry.catalog_json()["capabilities"] if c["id"] == capability_id)


def rendered(capability_id: str, config: dict, org) -> tuple[str, list[tuple[str, str]]]:
    fields = fields_for(schema(capability_id), config, prefix=f"cap-{capability_id}", errors={},
                        organization_id=org.pk)
    html = "".join(render_to_string("console/_config_field.html", {"f": f}) for f in fields)
    parser = _Form()
    parser.feed(html)
    return html, parser.pairs


def post_of(pairs: list[tuple[str, str]], **changes) -> QueryDict:
    data = QueryDict(mutable=True)
    for name, value in pairs:
        data.appendlist(name, value)
    for name, value in changes.items():
        data.setlist(name, value if isinstance(value, list) else [value])
    return data


def as_form(post: QueryDict) -> dict[str, list[str]]:
    """What the test client posts: every value of every name (QueryDict.items() would keep the last)."""
    return {name: post.getlist(name) for name in post}


def binding(agent: Agent, capability_id: str) -> dict:
    agent.refresh_from_db()
    return next(b for b in agent.draft_spec["capabilities"] if b["id"] == capability_id)


@pytest.fixture
def support(org, owner):
    return factories.published_agent(org, owner, name="Support")


def test_custom_tools_are_picked_with_their_approval_and_saved_through_the_builder(
        client_as, org, owner, support, outsider_org):
    lookup = factories.custom_tool(org, name="Find contact", alias="find_contact", url="https://api.example.com/c",
                                   tags=["hubspot"])
    refund = factories.custom_tool(org, name="Refund", alias="refund", url="https://api.example.com/r",
                                   kit_name="Stripe billing", warnings=[{"level": "critical", "text": "Real money."}])
    foreign = factories.custom_tool(outsider_org, name="Foreign tool", alias="foreign", url="https://x.example/")

    html, pairs = rendered("custom_tools", {"tool_ids": [str(lookup.pk)]}, org)

    assert 'data-picker="tools"' in html and "Foreign tool" not in html and str(foreign.pk) not in html
    assert 'data-config-field="tool_approval"' not in html  # folded into the picker, one select per tool
    assert f'value="{lookup.pk}" checked' in html and f'value="{refund.pk}" >' in html
    assert "Stripe billing" in html and "critical" in html
    post = post_of(pairs, **{"config.tool_ids": [str(lookup.pk), str(refund.pk)], "config.tool_approval.refund":
                             "required", "enabled": "on", "approval": "default"})
    response = client_as(owner, org).post(f"/agents/{support.pk}/toolbox/custom_tools", as_form(post))

    assert response.status_code == 302
    config = binding(support, "custom_tools")["config"]
    assert config["tool_ids"] == [str(lookup.pk), str(refund.pk)] and config["tool_approval"] == {"refund": "required"}
    _html, pairs = rendered("custom_tools", config, org)
    assert ("config.tool_approval.refund", "required") in pairs  # the saved choice comes back selected


def test_unticking_every_tool_saves_an_empty_choice(org):
    tool = factories.custom_tool(org, alias="ping", url="https://api.example.com/p")
    _html, pairs = rendered("custom_tools", {"tool_ids": [str(tool.pk)], "tool_approval": {"ping": "never"}}, org)
    post = post_of([(n, v) for n, v in pairs if n != "config.tool_ids"], **{"config.tool_approval.ping": "default"})
    config = config_from_post(schema("custom_tools"), post)
    assert config["tool_ids"] == [] and config["tool_approval"] == {}


def test_the_slot_budget_refuses_picking_too_many_tools_and_nothing_is_saved(client_as, org, owner, support):
    tools = [factories.custom_tool(org, url="https://api.example.com/t") for _ in range(26)]
    _html, pairs = rendered("custom_tools", {}, org)
    post = post_of(pairs, **{"config.tool_ids": [str(t.pk) for t in tools], "enabled": "on"})
    response = client_as(owner, org).post(f"/agents/{support.pk}/toolbox/custom_tools", as_form(post))
    assert response.status_code == 422  # (the Builder page shows the service's problem; its own test covers that)
    support.refresh_from_db()
    assert not any(b.get("id") == "custom_tools" for b in support.draft_spec.get("capabilities", []))


def test_database_connections_are_picked_with_their_permission_and_slots(org, outsider_org):
    def conn(organization, name, permission):
        return DatabaseConnection.objects.create(organization=organization, name=name, permission=permission,
                                                 key_version=1, wrapped_key=b"k", ciphertext=b"c")

    shop, _ = conn(org, "shop", "write"), conn(outsider_org, "theirs", "read")
    html, pairs = rendered("database", {}, org)
    assert 'data-picker="databases"' in html and "shop" in html and "theirs" not in html and "5 slots" in html
    config = config_from_post(schema("database"), post_of(pairs, **{"config.connection_ids": [str(shop.pk)]}))
    assert config == {"connection_ids": [str(shop.pk)]}


def test_mcp_tools_are_allowed_one_by_one_with_their_approval(org, outsider_org):
    server = McpConnection.objects.create(organization=org, name="crm", url="https://mcp.example.com/mcp",
                                          tools=[{"name": "search", "description": "Search."},
                                                 {"name": "delete_all", "description": "Deletes."}])
    McpConnection.objects.create(organization=outsider_org, name="theirs", url="https://x.example/mcp", tools=[])
    html, pairs = rendered("mcp", {}, org)
    assert 'data-pick-tool="crm_search"' in html and "theirs" not in html
    post = post_of(pairs, **{"config.connections": [str(server.pk)],
                             f"config.connections.{server.pk}.allowed": ["search"],
                             f"config.connections.{server.pk}.approval.crm_search": "required"})
    post.pop(f"config.connections.{server.pk}.all", None)
    config = config_from_post(schema("mcp"), post)
    assert config == {"connections": [{"connection_id": str(server.pk), "allowed_tools": ["search"],
                                       "tool_approval": {"crm_search": "required"}}]}
    _html, pairs = rendered("mcp", config, org)  # the saved choice comes back as it was picked
    assert (f"config.connections.{server.pk}.allowed", "search") in pairs
    assert (f"config.connections.{server.pk}.allowed", "delete_all") not in pairs
    assert (f"config.connections.{server.pk}.all", "on") not in pairs and ("config.connections", str(server.pk)) in pairs
    assert (f"config.connections.{server.pk}.approval.crm_search", "required") in pairs


def test_without_an_organization_the_json_box_stays(org):
    fields = fields_for(schema("custom_tools"), {"tool_ids": []}, prefix="cap-custom_tools", errors={})
    assert {f["name"]: f["kind"] for f in fields}["tool_ids"] == "json"


def test_a_viewer_cannot_save_a_pick(client_as, org, viewer, support):
    tool = factories.custom_tool(org, url="https://api.example.com/p")
    response = client_as(viewer, org).post(f"/agents/{support.pk}/toolbox/custom_tools", {
        "enabled": "on", "config.tool_ids.picker": "1", "config.tool_ids": str(tool.pk)})
    assert response.status_code == 403
    support.refresh_from_db()
    assert not any(b.get("id") == "custom_tools" for b in support.draft_spec.get("capabilities", []))

"""Management REST: create/list per agent, get/patch/pause/resume/delete, logo upload. Tenant isolation
with an outsider organization on every endpoint, and a too-weak role on every endpoint."""

from __future__ import annotations

import io

import pytest

from agenticos.models import AuditEvent, Secret
from embeds.models import Embed
from tests import factories
from tests.embeds.conftest import FRONTEND

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 64


@pytest.fixture
def agent(org, builder):
    """The builder's own agent: creating or changing an agent's embeds needs edit access to it (embeds/api.py),
    which a builder has on the agents they own — not on every agent of the organization."""
    return factories.published_agent(org, builder, name="Shop Helper")


def _create(client, agent, **body):
    return client.post(f"/api/v1/agents/{agent.pk}/embeds", body, format="json")


def test_a_builder_creates_a_widget_and_gets_its_snippet_and_socket_url(api_as, builder, org, agent):
    response = _create(api_as(builder, org), agent, kind="widget", allowed_origins=["https://Shop.example.com/"])
    assert response.status_code == 201, response.json()
    data = response.json()
    key = data["public_key"]
    assert data["allowed_origins"] == ["https://shop.example.com"]
    assert data["snippet"] == f'<script src="{FRONTEND}/api/v1/embed/{key}/widget.js" async></script>'
    assert data["socket_url"] == f"wss://app.example.com/api/v1/embed/{key}/ws"
    assert AuditEvent.objects.filter(action="embed.create", target_id=data["id"]).exists()


def test_the_snippet_carries_the_declared_variables(api_as, builder, org, agent):
    response = _create(
        api_as(builder, org),
        agent,
        kind="widget",
        allowed_origins=["https://shop.example.com"],
        variables=[{"name": "plan", "required": True}, {"name": "locale"}],
    )
    assert response.json()["snippet"].startswith('<script>window.AgenticOSContext = { plan: "", locale: "" };</script>')


def test_a_hosted_page_gets_its_link(api_as, builder, org, agent):
    response = _create(api_as(builder, org), agent, kind="page", welcome="**Hi**")
    assert response.status_code == 201
    data = response.json()
    assert data["page_url"] == f"{FRONTEND}/e/{data['public_key']}"
    assert data["show_tool_steps"] is True and data["show_tool_results"] is False and data["show_thinking"] is False
    assert data["allow_new_thread"] is True and data["allow_microphone"] is False and data["allow_uploads"] is False
    assert "snippet" not in data and "allowed_origins" in data and data["allowed_origins"] == []


@pytest.mark.parametrize("kind", ["widget", "socket"])
def test_publishing_a_widget_or_socket_without_origins_is_refused(api_as, builder, org, agent, kind):
    response = _create(api_as(builder, org), agent, kind=kind)
    assert response.status_code == 422
    assert response.json()["error"]["details"]["field"] == "allowed_origins"
    assert not Embed.objects.exists()


def test_an_origin_with_a_path_is_not_an_origin(api_as, builder, org, agent):
    response = _create(api_as(builder, org), agent, kind="widget", allowed_origins=["https://shop.example.com/app"])
    assert response.status_code == 422


def test_a_page_refuses_a_list_of_origins_and_jwt_with_a_message(api_as, builder, org, agent):
    client = api_as(builder, org)
    with_origins = _create(client, agent, kind="page", allowed_origins=["https://a.example"])
    assert with_origins.status_code == 422 and "origin" in with_origins.json()["error"]["message"]
    with_jwt = _create(client, agent, kind="page", auth_mode="jwt", jwt_secret="x" * 32)
    assert with_jwt.status_code == 422 and "jwt" in with_jwt.json()["error"]["message"]


def test_a_page_refuses_a_required_variable_that_is_not_url_safe(api_as, builder, org, agent):
    response = _create(api_as(builder, org), agent, kind="page", variables=[{"name": "tier", "required": True}])
    assert response.status_code == 422 and "URL-safe" in response.json()["error"]["message"]


def test_tool_results_without_steps_are_refused(api_as, builder, org, agent):
    response = _create(api_as(builder, org), agent, kind="page", show_tool_steps=False, show_tool_results=True)
    assert response.status_code == 422


def test_page_toggles_are_refused_on_a_widget(api_as, builder, org, agent):
    response = _create(
        api_as(builder, org), agent, kind="widget", allowed_origins=["https://a.example"], show_thinking=True
    )
    assert response.status_code == 422


def test_a_jwt_widget_seals_its_secret_and_never_returns_it(api_as, builder, org, agent):
    secret_value = "integrator-signing-secret-0123456789"
    response = _create(
        api_as(builder, org), agent, kind="widget", allowed_origins=["https://a.example"], auth_mode="jwt",
        jwt_secret=secret_value,
    )
    assert response.status_code == 201
    assert response.json()["jwt_secret_set"] is True
    assert secret_value not in response.content.decode()
    assert secret_value[-4:] not in response.content.decode()
    stored = Secret.objects.get(pk=Embed.objects.get().jwt_secret_id)
    assert secret_value.encode() not in bytes(stored.ciphertext)


def test_jwt_mode_without_a_secret_is_refused(api_as, builder, org, agent):
    response = _create(api_as(builder, org), agent, kind="socket", allowed_origins=["https://a.example"], auth_mode="jwt")
    assert response.status_code == 422


def test_an_embed_needs_an_existing_environment(api_as, builder, org, agent):
    response = _create(api_as(builder, org), agent, kind="page", environment="staging")
    assert response.status_code == 422


def test_the_list_shows_only_this_agents_embeds(api_as, builder, org, agent, owner):
    other = factories.published_agent(org, owner, name="Other")
    factories.embed(agent, kind="page")
    factories.embed(other, kind="page")
    response = api_as(builder, org).get(f"/api/v1/agents/{agent.pk}/embeds")
    assert response.status_code == 200
    assert [e["agent_id"] for e in response.json()["results"]] == [str(agent.pk)]


def test_the_list_does_not_query_once_per_embed(api_as, builder, org, agent, django_assert_max_num_queries):
    for _ in range(5):
        factories.embed(agent, kind="page")
    client = api_as(builder, org)
    with django_assert_max_num_queries(8):
        response = client.get(f"/api/v1/agents/{agent.pk}/embeds")
    assert len(response.json()["results"]) == 5


def test_the_kind_is_fixed_at_creation(api_as, builder, org, widget):
    response = api_as(builder, org).patch(f"/api/v1/embeds/{widget.pk}", {"kind": "page"}, format="json")
    assert response.status_code == 422
    widget.refresh_from_db()
    assert widget.kind == "widget"


def test_patch_changes_appearance_and_refuses_emptying_the_origin_list(api_as, builder, org, widget):
    client = api_as(builder, org)
    ok = client.patch(f"/api/v1/embeds/{widget.pk}", {"accent_color": "#112233", "corner": "bottom-left"}, format="json")
    assert ok.status_code == 200 and ok.json()["accent_color"] == "#112233"
    empty = client.patch(f"/api/v1/embeds/{widget.pk}", {"allowed_origins": []}, format="json")
    assert empty.status_code == 422
    widget.refresh_from_db()
    assert widget.allowed_origins == ["https://shop.example.com"]


def test_pause_and_resume(api_as, builder, org, widget):
    client = api_as(builder, org)
    assert client.post(f"/api/v1/embeds/{widget.pk}/pause").json()["is_paused"] is True
    assert client.post(f"/api/v1/embeds/{widget.pk}/resume").json()["is_paused"] is False
    assert AuditEvent.objects.filter(action="embed.pause", target_id=str(widget.pk)).exists()


def test_delete_removes_the_embed_and_its_sealed_secret(api_as, builder, org, agent):
    client = api_as(builder, org)
    created = _create(client, agent, kind="socket", allowed_origins=["https://a.example"], auth_mode="jwt",
                      jwt_secret="y" * 32).json()
    secret_id = Embed.objects.get(pk=created["id"]).jwt_secret_id
    assert client.delete(f"/api/v1/embeds/{created['id']}").status_code == 204
    assert not Embed.objects.filter(pk=created["id"]).exists()
    assert not Secret.objects.filter(pk=secret_id).exists()


def test_a_logo_is_stored_under_a_name_minted_from_its_sniffed_type(api_as, builder, org, page):
    upload = io.BytesIO(PNG)
    upload.name = "evil.html"
    response = api_as(builder, org).post(f"/api/v1/embeds/{page.pk}/logo", {"file": upload}, format="multipart")
    assert response.status_code == 200, response.json()
    page.refresh_from_db()
    assert page.logo_path == f"embeds/{page.pk}/logo.png"
    assert page.logo_source == "uploaded"


def test_a_logo_that_is_html_or_svg_is_refused(api_as, builder, org, page):
    client = api_as(builder, org)
    for body in (b"<html><script>alert(1)</script></html>", b'<svg xmlns="http://www.w3.org/2000/svg"/>'):
        upload = io.BytesIO(body)
        upload.name = "logo.png"
        response = client.post(f"/api/v1/embeds/{page.pk}/logo", {"file": upload}, format="multipart")
        assert response.status_code == 422


def test_a_logo_over_two_megabytes_is_refused(api_as, builder, org, page):
    upload = io.BytesIO(PNG + b"\x00" * (2 * 1024 * 1024))
    upload.name = "big.png"
    response = api_as(builder, org).post(f"/api/v1/embeds/{page.pk}/logo", {"file": upload}, format="multipart")
    assert response.status_code == 422


def _every_endpoint(agent, embed):
    return [
        ("get", f"/api/v1/agents/{agent.pk}/embeds", None),
        ("post", f"/api/v1/agents/{agent.pk}/embeds", {"kind": "page"}),
        ("get", f"/api/v1/embeds/{embed.pk}", None),
        ("patch", f"/api/v1/embeds/{embed.pk}", {"title": "x"}),
        ("post", f"/api/v1/embeds/{embed.pk}/pause", None),
        ("post", f"/api/v1/embeds/{embed.pk}/resume", None),
        ("delete", f"/api/v1/embeds/{embed.pk}", None),
    ]


def test_an_outsider_organization_gets_404_on_every_endpoint(api_as, outsider, outsider_org, agent, page):
    client = api_as(outsider, outsider_org)
    for method, url, body in _every_endpoint(agent, page):
        response = getattr(client, method)(url, body, format="json")
        assert response.status_code == 404, (method, url, response.status_code)
    upload = io.BytesIO(PNG)
    upload.name = "a.png"
    assert client.post(f"/api/v1/embeds/{page.pk}/logo", {"file": upload}, format="multipart").status_code == 404
    page.refresh_from_db()
    assert page.title == "" and not page.is_paused


def test_an_outsider_naming_our_organization_gets_404(api_as, outsider, org, page):
    response = api_as(outsider, org).get(f"/api/v1/embeds/{page.pk}")
    assert response.status_code == 404


def test_a_member_is_too_weak_on_every_endpoint(api_as, member, org, agent, page):
    client = api_as(member, org)
    for method, url, body in _every_endpoint(agent, page):
        response = getattr(client, method)(url, body, format="json")
        assert response.status_code == 403, (method, url, response.status_code)
    upload = io.BytesIO(PNG)
    upload.name = "a.png"
    assert client.post(f"/api/v1/embeds/{page.pk}/logo", {"file": upload}, format="multipart").status_code == 403
    assert Embed.objects.filter(pk=page.pk).exists()

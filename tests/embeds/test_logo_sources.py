"""A hosted page's logo from each of its sources: its own upload, the agent's avatar, the organization's logo,
or none — each uploaded through the API as a sniffed PNG/JPEG/WebP/GIF of at most 2 MB, each served from our
origin only, never across organizations."""

from __future__ import annotations

import pytest
from django.core.files.storage import default_storage
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from agenticos.models import AuditEvent, Organization
from agents.models import Agent
from embeds.models import Embed
from tests import factories

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 64
GIF = b"GIF89a" + b"\x00" * 64
SVG = b'<?xml version="1.0"?><svg xmlns="http://www.w3.org/2000/svg"/>'


def image(data: bytes, name: str = "picture.png") -> dict:
    return {"file": SimpleUploadedFile(name, data, content_type="image/png")}


def config(page) -> dict:
    return Client().get(f"/api/v1/embed/{page.public_key}/config").json()


def served(page):
    return Client().get(f"/api/v1/embed/{page.public_key}/logo")


def test_a_page_showing_the_agents_avatar_serves_it_after_its_owner_uploads_one(api_as, org, owner, page, agent):
    Embed.objects.filter(pk=page.pk).update(logo_source="agent")
    assert config(page)["logoUrl"] is None and served(page).status_code == 404

    response = api_as(owner, org).post(f"/api/v1/agents/{agent.pk}/avatar", image(PNG), format="multipart")

    assert response.status_code == 200, response.content
    assert response.json() == {"has_avatar": True}
    assert config(page)["logoUrl"].endswith(f"/api/v1/embed/{page.public_key}/logo")
    logo = served(page)
    assert logo.status_code == 200 and logo["Content-Type"] == "image/png" and logo.content == PNG
    assert AuditEvent.objects.filter(action="agent.avatar_set", organization=org).exists()


@pytest.mark.django_db(transaction=True)
def test_the_organizations_logo_is_set_replaced_and_removed_by_an_admin(api_as, org, owner, page):
    Embed.objects.filter(pk=page.pk).update(logo_source="organization")
    client = api_as(owner, org)

    assert client.post("/api/v1/organization/logo", image(PNG), format="multipart").status_code == 200
    first = Organization.objects.get(pk=org.pk).logo_path
    assert served(page).content == PNG

    assert client.post("/api/v1/organization/logo", image(GIF, "x.gif"), format="multipart").status_code == 200
    second = Organization.objects.get(pk=org.pk).logo_path
    assert second.endswith(".gif") and served(page)["Content-Type"] == "image/gif"
    assert not default_storage.exists(first)  # the replaced file is gone once the change committed

    assert client.delete("/api/v1/organization/logo").status_code == 204
    assert Organization.objects.get(pk=org.pk).logo_path == ""
    assert not default_storage.exists(second)
    assert served(page).status_code == 404 and config(page)["logoUrl"] is None


@pytest.mark.parametrize(("data", "message"), [
    (SVG, "must be a PNG, JPEG, WebP or GIF image"),
    (b"<html><script>alert(1)</script></html>", "must be a PNG, JPEG, WebP or GIF image"),
    (PNG + b"\x00" * (2 * 1024 * 1024), "larger than 2 MB"),
])
def test_anything_but_a_small_image_is_refused_and_nothing_is_stored(api_as, org, owner, agent, data, message):
    for url in (f"/api/v1/agents/{agent.pk}/avatar", "/api/v1/organization/logo"):
        response = api_as(owner, org).post(url, image(data), format="multipart")
        assert response.status_code == 422, url
        assert message in response.json()["error"]["message"]
        assert response.json()["error"]["details"]["field"] == "file"
    assert Agent.objects.get(pk=agent.pk).avatar_path == ""
    assert Organization.objects.get(pk=org.pk).logo_path == ""


def test_a_missing_file_field_is_a_clear_error(api_as, org, owner):
    response = api_as(owner, org).post("/api/v1/organization/logo", {}, format="multipart")
    assert response.status_code == 422 and "multipart field 'file'" in response.json()["error"]["message"]


def test_who_may_change_pictures(api_as, org, owner, builder, member, viewer, agent):
    # The organization's logo: admins and owners only.
    for person in (builder, member, viewer):
        assert api_as(person, org).post("/api/v1/organization/logo", image(PNG),
                                        format="multipart").status_code == 403
    # The agent's avatar: whoever can edit the agent (a builder only their own or shared-for-edit agents).
    assert api_as(builder, org).post(f"/api/v1/agents/{agent.pk}/avatar", image(PNG),
                                     format="multipart").status_code == 403
    assert api_as(member, org).post(f"/api/v1/agents/{agent.pk}/avatar", image(PNG),
                                    format="multipart").status_code == 403
    assert api_as(viewer, org).delete(f"/api/v1/agents/{agent.pk}/avatar").status_code == 403
    assert Agent.objects.get(pk=agent.pk).avatar_path == ""


def test_an_outsider_cannot_reach_our_agent_and_their_logo_never_shows_on_our_page(
        api_as, org, outsider_org, outsider, page, agent):
    Embed.objects.filter(pk=page.pk).update(logo_source="organization")
    assert api_as(outsider, outsider_org).post(f"/api/v1/agents/{agent.pk}/avatar", image(PNG),
                                               format="multipart").status_code == 404
    # Their own logo lands on their organization only.
    assert api_as(outsider, outsider_org).post("/api/v1/organization/logo", image(PNG),
                                               format="multipart").status_code == 200
    assert Organization.objects.get(pk=org.pk).logo_path == ""
    assert served(page).status_code == 404
    # Naming our organization in the header does not make it theirs.
    assert api_as(outsider, org).post("/api/v1/organization/logo", image(PNG),
                                      format="multipart").status_code == 404


def test_a_page_set_to_no_logo_shows_none_even_when_sources_have_one(api_as, org, owner, page, agent):
    api_as(owner, org).post(f"/api/v1/agents/{agent.pk}/avatar", image(PNG), format="multipart")
    api_as(owner, org).post("/api/v1/organization/logo", image(PNG), format="multipart")
    Embed.objects.filter(pk=page.pk).update(logo_source="none")
    assert config(page)["logoUrl"] is None and served(page).status_code == 404
    other = factories.embed(agent, kind="page", created_by=owner, logo_source="uploaded")
    assert config(other)["logoUrl"] is None  # uploaded, but nothing was uploaded

"""Generated files in the operator console: listed with links to their organization, run and conversation in
a bounded number of queries, found by a pasted id, and never added, changed or deleted there (a row deleted
in the console would leave its bytes in storage)."""

from __future__ import annotations

import pytest
from django.core.files.storage import default_storage
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from media import store
from media.models import GeneratedMedia
from tests import factories
from tests.governance.helpers import conversation, run_in

pytestmark = pytest.mark.django_db

CHANGELIST = "admin:generated_media_generatedmedia_changelist"


@pytest.fixture(autouse=True)
def _media_root(settings, tmp_path):
    settings.MEDIA_ROOT = str(tmp_path / "media")


@pytest.fixture
def console(client):
    client.force_login(factories.user(email="operator@example.com", is_staff=True, is_superuser=True))
    return client


def make_files(count: int) -> list[GeneratedMedia]:
    made = []
    for _ in range(count):
        org = factories.organization(name="Studio")
        owner = factories.member(org, "owner")
        chat = conversation(factories.published_agent(org, owner), owner)
        made.append(store.save(organization_id=org.pk, run_id=run_in(chat).pk, conversation_id=chat.pk,
                               kind="image", data=b"\x89PNG....", media_type="image/png", name="fox"))
    return made


def test_the_list_links_each_file_to_its_organization_run_and_conversation_in_bounded_queries(console):
    [first] = make_files(1)
    with CaptureQueriesContext(connection) as one:
        page = console.get(reverse(CHANGELIST))
    assert page.status_code == 200
    html = page.content.decode()
    for target in (first.organization, first.run, first.conversation):
        url = reverse(f"admin:{target._meta.app_label}_{target._meta.model_name}_change", args=[target.pk])
        assert url in html
    make_files(3)
    with CaptureQueriesContext(connection) as four:
        assert console.get(reverse(CHANGELIST)).status_code == 200
    assert len(four) == len(one)


def test_a_pasted_run_id_finds_its_file(console):
    first, second = make_files(2)
    page = console.get(reverse(CHANGELIST), {"q": str(second.run_id)})
    assert second.filename in page.content.decode() and first.filename not in page.content.decode()


def test_a_file_cannot_be_added_changed_or_deleted_in_the_console(console):
    [media] = make_files(1)
    change = reverse("admin:generated_media_generatedmedia_change", args=[media.pk])
    delete = reverse("admin:generated_media_generatedmedia_delete", args=[media.pk])

    assert console.get(change).status_code == 200
    assert console.post(change, {"name": "renamed.png"}).status_code == 403
    assert console.post(delete, {"post": "yes"}).status_code == 403
    assert console.post(reverse("admin:generated_media_generatedmedia_add"), {}).status_code == 403
    assert GeneratedMedia.objects.get(pk=media.pk).name == "fox.png"
    assert default_storage.exists(media.path)

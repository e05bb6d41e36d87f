"""Apps in the console: mine / shared with me, one application with its version history and share dialog, and
the page itself in its sandbox. Another organization's application is a 404 everywhere; a viewer sees what is
shared with the organization but changes nothing; a private page is nobody else's until its owner shares it."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from guardian.models import UserObjectPermission

from agenticos.models import AuditEvent
from capabilities.artifacts import access, services
from capabilities.artifacts.models import Artifact
from tests import factories

pytestmark = pytest.mark.django_db
PAGE = "<!doctype html><h1>Weekly report</h1><p>Revenue: 120</p>"


@pytest.fixture
def reporter(org, builder):
    return factories.published_agent(org, builder, name="Reporter", capabilities=[{"id": "artifacts"}])


def publish(org, agent, owner, *, name="weekly-report", text=PAGE, fmt="html", title="Weekly") -> Artifact:
    return services.publish(organization_id=org.pk, agent_id=agent.pk, environment="production", name=name,
                            owner_id=owner.pk, text=text, fmt=fmt, title=title).artifact


def body(response) -> str:
    return response.content.decode().split('id="main"', 1)[1]


def grants() -> int:
    return UserObjectPermission.objects.filter(content_type__model="artifact").count()


def test_my_private_page_is_under_mine_and_nobody_elses_list(client_as, org, member, viewer, reporter):
    publish(org, reporter, member)
    mine = body(client_as(member, org).get("/apps/"))
    assert 'data-app-row="weekly-report"' in mine.split('data-apps="shared"')[0]
    colleague = factories.member(org, "member")
    for person in (colleague, viewer):
        assert "weekly-report" not in body(client_as(person, org).get("/apps/"))


def test_a_page_shared_with_the_organization_is_under_shared_with_me(client_as, org, member, viewer, reporter):
    artifact = publish(org, reporter, member)
    Artifact.objects.filter(pk=artifact.pk).update(visibility="organization")
    page = body(client_as(viewer, org).get("/apps/"))
    assert 'data-app-row="weekly-report"' in page.split('data-apps="shared"')[1]


def test_another_organizations_application_is_a_404_on_every_page(client_as, org, member, reporter, outsider,
                                                                   outsider_org):
    artifact = publish(org, reporter, member)
    Artifact.objects.filter(pk=artifact.pk).update(visibility="organization")
    client = client_as(outsider, outsider_org)
    assert "weekly-report" not in body(client.get("/apps/"))
    for path in (f"/apps/{artifact.pk}/", f"/apps/{artifact.pk}/raw", f"/apps/{artifact.pk}/raw?version=1"):
        assert client.get(path).status_code == 404, path
    response = client.post(f"/apps/{artifact.pk}/share", {"action": "grant", "user_id": outsider.pk, "level": "edit"})
    assert response.status_code == 404
    assert grants() == 0


def test_a_private_page_is_a_404_for_a_colleague(client_as, org, member, reporter):
    artifact = publish(org, reporter, member)
    colleague = factories.member(org, "member")
    client = client_as(colleague, org)
    assert client.get(f"/apps/{artifact.pk}/").status_code == 404
    assert client.get(f"/apps/{artifact.pk}/raw").status_code == 404
    assert client.post(f"/apps/{artifact.pk}/share", {"action": "visibility",
                                                     "visibility": "organization"}).status_code == 404
    artifact.refresh_from_db()
    assert artifact.visibility == "private"


def test_a_viewer_sees_a_shared_page_read_only_and_cannot_change_who_reads_it(client_as, org, member, viewer,
                                                                              reporter):
    artifact = publish(org, reporter, member)
    Artifact.objects.filter(pk=artifact.pk).update(visibility="organization")
    client = client_as(viewer, org)
    page = body(client.get(f"/apps/{artifact.pk}/"))
    assert "read only" in page and "data-share-dialog" not in page
    assert 'sandbox="allow-scripts"' in page and "allow-same-origin" not in page
    for form in ({"action": "visibility", "visibility": "private"},
                 {"action": "grant", "user_id": viewer.pk, "level": "edit"}):
        assert client.post(f"/apps/{artifact.pk}/share", form).status_code == 403
    artifact.refresh_from_db()
    assert artifact.visibility == "organization" and grants() == 0
    assert not AuditEvent.objects.filter(action__startswith="artifact.").exclude(action="artifact.published").exists()


def test_a_viewer_granted_edit_still_cannot_share(client_as, org, member, viewer, reporter):
    artifact = publish(org, reporter, member)
    services.share(actor=factories_actor(member, org), artifact=artifact, user_id=viewer.pk, level="edit")
    client = client_as(viewer, org)
    assert "data-share-dialog" not in body(client.get(f"/apps/{artifact.pk}/"))
    colleague = factories.member(org, "member")
    response = client.post(f"/apps/{artifact.pk}/share", {"action": "grant", "user_id": colleague.pk, "level": "view"})
    assert response.status_code == 403
    assert access.level_for("member", colleague.pk, artifact) is None


def factories_actor(user, org):
    from agenticos.models import Membership
    from agenticos.tenancy import actor_for_membership

    return actor_for_membership(Membership.objects.select_related("user", "organization").get(user=user, organization=org))


def test_the_owner_shares_with_a_colleague_and_takes_it_back(client_as, org, member, reporter):
    artifact = publish(org, reporter, member)
    colleague = factories.member(org, "member")
    client = client_as(member, org)
    page = body(client.get(f"/apps/{artifact.pk}/"))
    assert "data-share-dialog" in page and f'<option value="{colleague.pk}">' in page
    response = client.post(f"/apps/{artifact.pk}/share", {"action": "grant", "user_id": colleague.pk, "level": "view"})
    assert response.status_code == 302
    assert 'data-app-row="weekly-report"' in body(client_as(colleague, org).get("/apps/"))
    assert client_as(colleague, org).get(f"/apps/{artifact.pk}/raw").status_code == 200
    client.post(f"/apps/{artifact.pk}/share", {"action": "revoke", "user_id": colleague.pk})
    assert client_as(colleague, org).get(f"/apps/{artifact.pk}/").status_code == 404


def test_sharing_with_someone_outside_the_organization_is_refused(client_as, org, member, reporter, outsider):
    artifact = publish(org, reporter, member)
    response = client_as(member, org).post(f"/apps/{artifact.pk}/share",
                                           {"action": "grant", "user_id": outsider.pk, "level": "edit"})
    assert response.status_code == 404
    assert grants() == 0


def test_the_version_history_lists_every_version_and_shows_the_one_asked_for(client_as, org, member, reporter):
    artifact = publish(org, reporter, member)
    publish(org, reporter, member, text=PAGE.replace("120", "130"))
    client = client_as(member, org)
    page = body(client.get(f"/apps/{artifact.pk}/?version=1"))
    assert 'data-version="2"' in page and 'data-version="1" aria-current="true"' in page
    assert f"/apps/{artifact.pk}/raw?version=1" in page
    assert "Revenue: 120" in client.get(f"/apps/{artifact.pk}/raw?version=1").content.decode()
    assert "Revenue: 130" in client.get(f"/apps/{artifact.pk}/raw").content.decode()
    assert "Revenue: 130" in client.get(f"/apps/{artifact.pk}/raw?version=99").content.decode()


def test_the_page_is_served_in_the_sandbox_with_no_network(client_as, org, member, reporter):
    artifact = publish(org, reporter, member)
    response = client_as(member, org).get(f"/apps/{artifact.pk}/raw")
    policy = response["Content-Security-Policy"]
    assert policy.startswith("sandbox allow-scripts;") and "allow-same-origin" not in policy
    assert "connect-src 'none'" in policy and "default-src 'none'" in policy
    assert "script-src 'unsafe-inline' http://testserver/apps/lib/;" in policy
    assert response["X-Content-Type-Options"] == "nosniff" and response["Cache-Control"] == "private, no-store"
    assert response.content.decode() == PAGE


def test_a_markdown_page_is_drawn_by_the_vendored_marked_and_dompurify(client_as, org, member, reporter):
    artifact = publish(org, reporter, member, name="notes", text="# Notes\n\n</script><script>alert(1)</script>",
                       fmt="markdown")
    page = client_as(member, org).get(f"/apps/{artifact.pk}/raw").content.decode()
    assert '<script src="/apps/lib/marked.umd.js"></script>' in page
    assert "DOMPurify.sanitize(marked.parse(" in page
    assert "</script><script>alert(1)" not in page  # the source is a JSON string that cannot close the script


def test_the_apps_list_does_not_grow_its_queries_with_its_rows(client_as, org, member, builder, reporter):
    client = client_as(member, org)

    def queries() -> int:
        with CaptureQueriesContext(connection) as captured:
            assert client.get("/apps/").status_code == 200
        return len(captured)

    publish(org, reporter, member, name="a-1")
    few = queries()
    for n in range(2, 8):
        other = factories.published_agent(org, builder, name=f"Agent {n}")
        publish(org, other, member, name=f"a-{n}")
    assert queries() == few


def test_the_library_bundle_is_served_to_any_origin_and_nothing_else_is(client):
    from django.urls import reverse

    from capabilities.artifacts import sandbox

    assert reverse("console-apps:library", args=["leaflet.js"]) == f"{sandbox.LIBRARY_PATH}leaflet.js"
    for name in sorted(sandbox.LIBRARY_FILES):
        response = client.get(f"/apps/lib/{name}")  # nobody signed in: a sandboxed frame sends no cookies
        assert response.status_code == 200, name
        assert response["Access-Control-Allow-Origin"] == "*" and response["X-Content-Type-Options"] == "nosniff"
        assert b"".join(response.streaming_content) == (sandbox.LIBRARY_DIR / name).read_bytes()
    assert client.get("/apps/lib/three.module.min.js")["Content-Type"].startswith("text/javascript")
    assert client.get("/apps/lib/leaflet.css")["Content-Type"].startswith("text/css")
    for name in ("VERSIONS.txt", "..%2Fhighlight.min.js", "../highlight.min.js", "highlight.min.js", "%2e%2e%2fsettings.py"):
        assert client.get(f"/apps/lib/{name}").status_code == 404, name

"""Collections shared by grant (view < use < edit): who sees a private collection, who may bind it to an
agent, who may change it, and an outsider organization that can never see, bind or be granted it."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from agenticos.models import AuditEvent, Membership
from agenticos.tenancy import Actor
from knowledge import grants
from knowledge.models import Collection
from tests import factories

pytestmark = pytest.mark.django_db


def actor(user, org) -> Actor:
    role = Membership.objects.get(organization=org, user=user).role
    return Actor(user=user, organization=org, role=role)


@pytest.fixture
def private(org, builder):
    return factories.collection(org, "Board minutes", visibility="private", created_by=builder)


@pytest.fixture
def other_builder(org):
    return factories.member(org, role="builder")


def share(api_as, who, org, collection, user, level):
    return api_as(who, org).post(f"/api/v1/collections/{collection.pk}/grants",
                                 {"user_id": user.pk, "level": level}, format="json")


def listed(api_as, who, org) -> dict[str, str]:
    response = api_as(who, org).get("/api/v1/collections")
    assert response.status_code == 200
    return {row["name"]: row["access"] for row in response.json()["results"]}


def test_a_private_collection_is_seen_only_by_its_creator_admins_and_grantees(api_as, org, builder, other_builder,
                                                                              member, admin_user, private):
    assert listed(api_as, builder, org) == {"Board minutes": "edit"}
    assert listed(api_as, admin_user, org) == {"Board minutes": "edit"}
    # knowledge:manage alone does not open someone else's private collection
    assert listed(api_as, other_builder, org) == {}
    assert listed(api_as, member, org) == {}
    assert api_as(member, org).get(f"/api/v1/collections/{private.pk}").status_code == 404
    assert api_as(member, org).get(f"/api/v1/collections/{private.pk}/documents").status_code == 404

    assert share(api_as, builder, org, private, member, "view").status_code == 201
    assert listed(api_as, member, org) == {"Board minutes": "view"}
    detail = api_as(member, org).get(f"/api/v1/collections/{private.pk}")
    assert detail.status_code == 200 and detail.json()["access"] == "view"


def test_an_organization_collection_keeps_the_role_levels(api_as, org, builder, member, viewer):
    factories.collection(org, "Handbook")
    assert listed(api_as, builder, org) == {"Handbook": "edit"}
    assert listed(api_as, member, org) == {"Handbook": "use"}
    assert listed(api_as, viewer, org) == {"Handbook": "view"}


def test_a_grant_raises_a_weak_role_and_an_edit_grant_allows_changes(api_as, org, builder, member, private,
                                                                     django_capture_on_commit_callbacks):
    client = api_as(member, org)
    share(api_as, builder, org, private, member, "use")
    refused = client.patch(f"/api/v1/collections/{private.pk}", {"description": "x"}, format="json")
    assert refused.status_code == 403 and refused.json()["error"]["details"] == {"needed": "edit", "have": "use"}

    assert share(api_as, builder, org, private, member, "edit").json()["level"] == "edit"
    assert listed(api_as, member, org) == {"Board minutes": "edit"}  # the new grant replaced the old one
    assert client.patch(f"/api/v1/collections/{private.pk}", {"description": "2026"}, format="json").status_code == 200
    with django_capture_on_commit_callbacks(execute=True):
        upload = client.post(f"/api/v1/collections/{private.pk}/documents",
                             {"file": SimpleUploadedFile("m.txt", b"Minutes of the board.")}, format="multipart")
    assert upload.status_code == 201, upload.json()
    assert client.post(f"/api/v1/documents/{upload.json()['id']}/reingest/").status_code == 202


def test_sharing_needs_edit_and_only_reaches_members_of_the_same_organization(api_as, org, builder, member, viewer,
                                                                             outsider, private):
    share(api_as, builder, org, private, member, "use")
    refused = share(api_as, member, org, private, viewer, "view")
    assert refused.status_code == 403
    assert api_as(member, org).get(f"/api/v1/collections/{private.pk}/grants").json()["results"] == [
        {"user_id": member.pk, "email": member.email, "level": "use"}]
    # an outsider is not a member here: the grant is refused and nothing is written
    response = share(api_as, builder, org, private, outsider, "edit")
    assert response.status_code == 404
    assert grants.grant_levels(outsider.pk) == {}
    bad_level = share(api_as, builder, org, private, member, "publish")
    assert bad_level.status_code == 400


def test_an_outsider_never_sees_lists_or_shares_the_collection(api_as, org, outsider, outsider_org, builder, member,
                                                              private):
    share(api_as, builder, org, private, member, "edit")
    client = api_as(outsider, outsider_org)
    assert client.get("/api/v1/collections").json()["results"] == []
    for url in (f"/api/v1/collections/{private.pk}", f"/api/v1/collections/{private.pk}/grants",
                f"/api/v1/collections/{private.pk}/documents"):
        assert client.get(url).status_code == 404
    assert client.post(f"/api/v1/collections/{private.pk}/grants", {"user_id": outsider.pk, "level": "view"},
                       format="json").status_code == 404
    assert client.delete(f"/api/v1/collections/{private.pk}/grants/{member.pk}").status_code == 404
    assert grants.grant_levels(member.pk) == {str(private.pk): "edit"}


def test_a_grant_to_an_outsider_row_does_not_open_the_collection_to_them(org, outsider, outsider_org, private):
    """Even a guardian row written behind the services' back gives nothing across organizations."""
    from guardian.shortcuts import assign_perm

    assign_perm("knowledge.edit_collection", outsider, private)
    outsider_actor = actor(outsider, outsider_org)
    assert grants.collection_access(outsider_actor, private) is None
    assert not grants.visible_collections(outsider_actor).exists()
    assert grants.unusable_collection_ids(outsider_actor, [private.pk]) == [str(private.pk)]


def test_binding_needs_use_access(org, builder, member, other_builder, outsider_org, private):
    mine = factories.collection(org, "Handbook")
    foreign = factories.collection(outsider_org, "Foreign")
    ids = [private.pk, mine.pk, foreign.pk, "not-a-uuid"]
    assert grants.unusable_collection_ids(actor(builder, org), ids) == ["not-a-uuid", str(foreign.pk)]
    assert grants.unusable_collection_ids(actor(other_builder, org), ids) == [
        "not-a-uuid", str(private.pk), str(foreign.pk)]

    builder_actor = actor(builder, org)
    grants.share_collection(actor=builder_actor, collection=private, user_id=other_builder.pk, level="view")
    assert str(private.pk) in grants.unusable_collection_ids(actor(other_builder, org), [private.pk])
    grants.share_collection(actor=builder_actor, collection=private, user_id=other_builder.pk, level="use")
    assert grants.unusable_collection_ids(actor(other_builder, org), [private.pk]) == []


def test_revoking_closes_access_and_both_are_audited(api_as, org, builder, member, private):
    share(api_as, builder, org, private, member, "view")
    assert api_as(builder, org).delete(f"/api/v1/collections/{private.pk}/grants/{member.pk}").status_code == 204
    assert api_as(member, org).get(f"/api/v1/collections/{private.pk}").status_code == 404
    assert api_as(builder, org).delete(f"/api/v1/collections/{private.pk}/grants/{member.pk}").status_code == 404
    actions = list(AuditEvent.objects.filter(organization=org, action__startswith="collection.").order_by("pk")
                   .values_list("action", flat=True))
    assert actions == ["collection.shared", "collection.unshared"]


def test_deleting_a_collection_or_removing_a_member_drops_the_grants(org, builder, member, viewer, private):
    builder_actor = actor(builder, org)
    other = factories.collection(org, "Other", visibility="private", created_by=builder)
    grants.share_collection(actor=builder_actor, collection=private, user_id=member.pk, level="use")
    grants.share_collection(actor=builder_actor, collection=other, user_id=member.pk, level="view")
    grants.share_collection(actor=builder_actor, collection=other, user_id=viewer.pk, level="view")
    from knowledge import services

    services.delete_collection(actor=builder_actor, collection=private)
    assert grants.grant_levels(member.pk) == {str(other.pk): "view"}
    grants.drop_grants_for_member(org, member.pk)
    assert grants.grant_levels(member.pk) == {}
    assert grants.grant_levels(viewer.pk) == {str(other.pk): "view"}


def test_visibility_can_be_changed_by_an_editor_only(api_as, org, builder, member, private):
    client = api_as(builder, org)
    response = client.patch(f"/api/v1/collections/{private.pk}", {"visibility": "organization"}, format="json")
    assert response.status_code == 200 and response.json()["visibility"] == "organization"
    assert listed(api_as, member, org) == {"Board minutes": "use"}
    refused = api_as(member, org).patch(f"/api/v1/collections/{private.pk}", {"visibility": "private"},
                                        format="json")
    assert refused.status_code == 403
    assert Collection.objects.get(pk=private.pk).visibility == "organization"


def test_the_list_with_grants_runs_in_a_constant_number_of_queries(api_as, org, builder, member):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    builder_actor = actor(builder, org)
    client = api_as(member, org)
    counts = []
    for total in (1, 5):
        while Collection.objects.filter(organization=org).count() < total:
            created = factories.collection(org, visibility="private", created_by=builder)
            grants.share_collection(actor=builder_actor, collection=created, user_id=member.pk, level="view")
        with CaptureQueriesContext(connection) as queries:
            response = client.get("/api/v1/collections")
        assert len(response.json()["results"]) == total
        counts.append(len(queries))
    assert counts[0] == counts[1]


def test_a_private_collection_saved_into_a_draft_cannot_be_published_by_who_may_not_use_it(
        org, builder, other_builder, private):
    """Drafts check references at publish only, so the publish check may exempt only what a previous publish
    already bound — never what the same person just wrote into the draft."""
    from agenticos.errors import Invalid
    from agents import services as agents

    theirs = factories.published_agent(org, other_builder, name="Theirs")
    intruder = actor(other_builder, org)
    agents.update_agent(actor=intruder, agent=theirs,
                        spec={**theirs.draft_spec, "collection_ids": [str(private.pk)]})
    theirs.refresh_from_db()
    with pytest.raises(Invalid) as refused:
        agents.publish_agent(actor=intruder, agent=theirs)
    assert any("use access" in p["message"] for p in refused.value.details["problems"])
    assert private.pk not in [c for v in theirs.versions.all() for c in v.spec.get("collection_ids", [])]

    # Once someone who may use it has published it, an editor without access may still publish other changes.
    grants.share_collection(actor=actor(builder, org), collection=private, user_id=other_builder.pk, level="use")
    agents.publish_agent(actor=intruder, agent=theirs)
    grants.revoke_collection_grant(actor=actor(builder, org), collection=private, user_id=other_builder.pk)
    theirs.refresh_from_db()
    agents.update_agent(actor=intruder, agent=theirs, spec={**theirs.draft_spec, "instructions": "Shorter."})
    agents.publish_agent(actor=intruder, agent=theirs)

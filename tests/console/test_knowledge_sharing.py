"""Who may read, use or change a knowledge collection, from the console (issue 44 §1 "grants"): the Sharing card of
a collection lists who was given access, gives a member a level in plain words and takes it away — the same
service and rules as /api/v1/collections/{id}/grants (knowledge.grants). Someone with less than edit access gets
no card and a refused POST that changed nothing; another organization's member cannot be chosen and another
organization gets 404 for the collection."""

from __future__ import annotations

import pytest

from agenticos.models import AuditEvent
from knowledge import grants
from knowledge.models import Collection
from tests import factories

pytestmark = pytest.mark.django_db

PAGE = "/knowledge/"


@pytest.fixture
def private(org, builder):
    return factories.collection(org, "Payroll", visibility=Collection.Visibility.PRIVATE, created_by=builder)


def holders(collection) -> dict[str, str]:
    return {g["email"]: g["level"] for g in grants.collection_grants(collection)}


def test_the_sharing_card_lists_members_and_levels_in_plain_words(client_as, org, builder, member, private):
    html = client_as(builder, org).get(f"{PAGE}{private.pk}/").content.decode()
    card = html.split("data-collection-sharing", 1)[1].split("</section>", 1)[0]
    assert "Nobody has been given access yet." in card
    assert member.email in card and f'<option value="{builder.pk}"' not in card  # not oneself
    for words in ("Can read", "Can read and use it in agents", "Can change, upload and share"):
        assert words in card
    assert "Only you, the organization" in card
    assert "Can change, upload and share" in html.split("<h1>", 1)[1].split("</h1>", 1)[0]  # one's own access


def test_a_builder_gives_a_member_access_and_the_member_then_has_it(client_as, org, builder, member, private):
    client = client_as(builder, org)
    assert client_as(member, org).get(f"{PAGE}{private.pk}/").status_code == 404  # private: not even seen

    response = client.post(f"{PAGE}{private.pk}/sharing", {"user_id": member.pk, "level": "edit"})

    assert response.status_code == 302 and response["Location"] == f"{PAGE}{private.pk}/#sharing"
    assert holders(private) == {member.email: "edit"}
    assert AuditEvent.objects.filter(action="collection.shared", target_id=str(private.pk)).count() == 1
    page = client_as(member, org).get(f"{PAGE}{private.pk}/").content.decode()
    assert "data-collection-sharing" in page and "data-upload" in page
    html = client.get(f"{PAGE}{private.pk}/").content.decode()
    assert f'data-grant="{member.email}"' in html and "Can change, upload and share" in html

    client.post(f"{PAGE}{private.pk}/sharing", {"user_id": member.pk, "level": "view"})  # replaces the level
    assert holders(private) == {member.email: "view"}


def test_removing_access_takes_it_away(client_as, org, builder, member, private):
    grants.share_collection(actor=factories_actor(builder, org), collection=private, user_id=member.pk, level="use")
    response = client_as(builder, org).post(f"{PAGE}{private.pk}/sharing/{member.pk}/remove")
    assert response.status_code == 302
    assert holders(private) == {}
    assert client_as(member, org).get(f"{PAGE}{private.pk}/").status_code == 404
    assert AuditEvent.objects.filter(action="collection.unshared", target_id=str(private.pk)).count() == 1


def test_a_missing_choice_or_a_foreign_member_is_said_at_its_field_and_grants_nothing(
        client_as, org, builder, member, private, outsider):
    client = client_as(builder, org)
    for data, words in (({"user_id": "", "level": "view"}, "Choose a member."),
                        ({"user_id": outsider.pk, "level": "view"}, "Choose a member of this organization."),
                        ({"user_id": outsider.pk, "level": "owner"}, "Choose what they may do.")):
        response = client.post(f"{PAGE}{private.pk}/sharing", data)
        assert response.status_code == 422, data
        html = response.content.decode()
        assert words in html and html.count(words) == 1, data  # once, at its field
        assert "user_id" not in html.split("data-collection-sharing", 1)[1].split("<form", 1)[0]
    assert holders(private) == {}
    assert not AuditEvent.objects.filter(action="collection.shared").exists()


def test_a_weaker_level_gets_no_card_and_its_posts_change_nothing(client_as, org, builder, member, viewer, private):
    grants.share_collection(actor=factories_actor(builder, org), collection=private, user_id=member.pk, level="use")
    client = client_as(member, org)
    assert "data-collection-sharing" not in client.get(f"{PAGE}{private.pk}/").content.decode()
    assert client.post(f"{PAGE}{private.pk}/sharing", {"user_id": viewer.pk, "level": "use"}).status_code == 403
    assert client.post(f"{PAGE}{private.pk}/sharing/{member.pk}/remove").status_code == 403
    assert holders(private) == {member.email: "use"}
    viewing = client_as(viewer, org)
    organization_wide = factories.collection(org, "Handbook", created_by=builder)
    assert "data-collection-sharing" not in viewing.get(f"{PAGE}{organization_wide.pk}/").content.decode()
    assert viewing.post(f"{PAGE}{organization_wide.pk}/sharing", {"user_id": member.pk, "level": "edit"}).status_code == 403
    assert holders(organization_wide) == {}


def test_another_organization_gets_404_and_a_reload_of_the_form_goes_back_to_the_page(
        client_as, org, builder, member, private, outsider, outsider_org):
    stranger = client_as(outsider, outsider_org)
    assert stranger.post(f"{PAGE}{private.pk}/sharing", {"user_id": outsider.pk, "level": "edit"}).status_code == 404
    assert stranger.post(f"{PAGE}{private.pk}/sharing/{member.pk}/remove").status_code == 404
    assert holders(private) == {}
    response = client_as(builder, org).get(f"{PAGE}{private.pk}/sharing")
    assert response.status_code == 302 and response["Location"] == f"{PAGE}{private.pk}/"


def factories_actor(user, org):
    from agenticos.models import Membership
    from agenticos.tenancy import actor_for_membership

    return actor_for_membership(Membership.objects.get(user=user, organization=org))

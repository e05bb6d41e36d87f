"""The snapshot the refusal tests compare (`tests.api.state`) sees a row added, a column changed and a row
removed — it is a fingerprint of the rows, not the rows, so this is what says it is still as strict as them."""

from __future__ import annotations

import pytest

from agenticos.models import Membership
from tests import factories
from tests.api.state import TABLES, changed_tables, database_state

pytestmark = pytest.mark.django_db


def test_the_snapshot_sees_a_row_added_a_column_changed_and_a_row_removed():
    org = factories.organization()
    owner = factories.member(org, "owner")
    before = database_state()
    assert changed_tables(before, database_state()) == []

    viewer = factories.member(org, "viewer")
    added = database_state()
    assert changed_tables(before, added) == ["agenticos.Membership"]

    Membership.objects.filter(user=viewer).update(role="member")  # one column of one row, same count
    changed = database_state()
    assert changed_tables(added, changed) == ["agenticos.Membership"]
    assert changed["agenticos.Membership"][0] == added["agenticos.Membership"][0]

    Membership.objects.filter(user=viewer).delete()
    assert changed_tables(changed, database_state()) == ["agenticos.Membership"]
    org.name = "Renamed"
    org.save(update_fields=["name"])
    assert changed_tables(before, database_state()) == ["agenticos.Organization"]
    assert owner.pk and set(database_state()) == set(TABLES)

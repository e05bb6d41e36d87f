"""The transactional tests' flush (tests/fastflush.py) leaves what Django's flush leaves: no row of any test,
and the content types and permissions post_migrate would rebuild, as post_migrate builds them."""

from __future__ import annotations

from django.contrib.auth.models import Permission
from django.contrib.contenttypes.models import ContentType
from django.db import connection
from django.test import TransactionTestCase

from agenticos.models import Membership, Organization, User
from tests import factories, fastflush


class _Flushed(TransactionTestCase):
    __test__ = False  # a case to flush with, not a test

    def runTest(self) -> None:  # noqa: N802  (unittest's name)
        pass


def _flush() -> None:
    fastflush._fixture_teardown(_Flushed())


def test_every_row_a_test_wrote_is_gone_and_the_content_types_and_permissions_stay(transactional_db):
    _flush()  # the session's first full flush may be this one: the kept tables' checksum is known after it
    permissions = Permission.objects.count()
    types = set(ContentType.objects.values_list("pk", "app_label", "model"))
    assert permissions > 0 and types
    factories.member(factories.organization(name="Acme"), "owner")
    assert Organization.objects.exists() and Membership.objects.exists() and User.objects.exists()

    _flush()

    assert not Organization.objects.exists() and not Membership.objects.exists() and not User.objects.exists()
    assert Permission.objects.count() == permissions
    assert set(ContentType.objects.values_list("pk", "app_label", "model")) == types


def test_a_permission_a_test_added_or_changed_does_not_outlive_it(transactional_db):
    _flush()
    kind = ContentType.objects.get_for_model(Organization)
    Permission.objects.create(codename="made_by_a_test", name="made by a test", content_type=kind)
    Permission.objects.filter(codename="view_organization").update(name="renamed by a test")

    _flush()

    assert not Permission.objects.filter(codename="made_by_a_test").exists()
    assert Permission.objects.get(codename="view_organization").name == "Can view organization"


def test_every_foreign_key_is_checked_at_commit_so_the_deletes_need_no_order(transactional_db):
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_constraint WHERE contype = 'f' AND NOT condeferrable")
        assert cursor.fetchone()[0] == 0
    fastflush._refuse_undeferrable_keys("default")  # and the check itself passes

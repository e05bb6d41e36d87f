"""The organization's own host uid for its jailed programs (see sandbox.py and `JailIdentity`).

A uid is a small number the kernel counts limits and file ownership by, so two organizations must never share
one, and one must never be handed on: the row is made once (the unique constraint settles a race between two
workers) and kept. The mapping never changes, so each process keeps what it has read.
"""

from __future__ import annotations

from django.conf import settings
from django.db import IntegrityError, transaction

_known: dict[str, int] = {}


def host_uid(organization_id: str) -> int:
    """Sync (ORM): call from a worker thread."""
    key = str(organization_id)
    found = _known.get(key)
    if found is not None:
        return found
    from capabilities.models import JailIdentity

    row = JailIdentity.objects.filter(organization_id=key).first()
    if row is None:
        try:
            with transaction.atomic():
                row = JailIdentity.objects.create(organization_id=key)
        except IntegrityError:
            row = JailIdentity.objects.get(organization_id=key)
    uid = settings.RUN_PYTHON_UID_BASE + row.id
    if uid > 2**32 - 2:
        raise OverflowError("RUN_PYTHON_UID_BASE leaves no room for another organization's uid")
    _known[key] = uid
    return uid

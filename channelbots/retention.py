"""The chat apps' own retention sweep, registered with governance.retention in ChannelbotsConfig.ready()."""

from __future__ import annotations

import logging
from datetime import datetime

from django.utils import timezone

from channelbots.models import LinkRequest
from governance.retention import delete_in_batches

logger = logging.getLogger(__name__)


def sweep_link_requests(now: datetime | None = None) -> int:
    """Chat-account link requests past their expiry (15 minutes after they were made)."""
    removed = delete_in_batches(LinkRequest.objects.filter(expires_at__lt=now or timezone.now()))
    if removed:
        logger.info("retention expired_link_requests: removed %d expired link requests", removed)
    return removed

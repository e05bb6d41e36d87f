"""What other apps hear about decisions, sent after the deciding transaction commits.

A channel bot listens: it updates the card of a parked call in its thread ("Approved by Ada in the console")
and follows a resumed run so its answer lands in the thread the question came from. Sent with
`send_robust`, so a listener that fails never undoes or fails a decision.
"""

from __future__ import annotations

import logging

from django.dispatch import Signal

logger = logging.getLogger(__name__)

# kwargs: approval_id, via ("" = the console or the REST API; "slack" | "telegram" | "mattermost")
approval_decided = Signal()
# kwargs: run_id — a parked run was queued again
run_resumed = Signal()
# kwargs: run_id, approval_ids — a run parked on gated calls: who may decide them is told (notifications)
approval_requested = Signal()


def send(signal: Signal, **kwargs) -> None:
    for receiver, result in signal.send_robust(sender=None, **kwargs):
        if isinstance(result, Exception):
            logger.error("a listener of a governance signal failed (%s): %r", getattr(receiver, "__name__", receiver),
                         result)

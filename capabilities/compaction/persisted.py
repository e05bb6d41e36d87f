"""A compacted conversation across turns (spec "Conversaciones largas", "Imágenes fuera del historial").

Between turns the history is rebuilt from the transcript's text (agents/runner/history.py), so a summary would
end with its run and the next turn would resend the words it replaced. The exception the spec makes: when a
run's history was actually compacted (a strategy changed it, noted as `COMPACTED` in the run's scratch),
pydantic-ai's own dump of that run's messages — ModelMessagesTypeAdapter JSON of what the model last saw, its
final answer and base64 included — is kept whole on the conversation (`agents.CompactedHistory`), with the id of
the newest transcript message it covers. The next turns replay it exactly, followed by the transcript messages
after that id as text, as before; the next run that compacts replaces it (a dump never replaces a newer one).
A run that replays it without compacting leaves it as it is.

With `media` bound on the compacting run, its parts of `threshold_bytes` or more go to the organization's store
behind media+sha256:// references (media/<organization>/<conversation>/<digest>), and every replay puts them back
before the request, bound or not. The organization and conversation come from the run, never from the
reference; both directions fail softly (capabilities/media/history.py). The row and the media folder go with
the conversation (a CASCADE, and the media pre_delete receiver); `sweep_expired` drops dumps older than the
transcript period.
"""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import Exists, OuterRef, Q, Subquery
from django.utils import timezone
from pydantic_ai.messages import ModelMessage, ModelMessagesTypeAdapter

from agents.models import CompactedHistory, Message, Run
from capabilities.lifecycle import RunHandle

logger = logging.getLogger(__name__)


def was_compacted(scratch: dict[str, Any]) -> bool:
    from capabilities.compaction import COMPACTED

    return bool(scratch.get(COMPACTED))


def keep(run: Run, messages: list[ModelMessage], *, through_message_id: int, threshold_bytes: int | None) -> None:
    """Keep a compacted run's messages on its conversation. Storage IO first, outside any transaction (no row
    is locked while the store writes). Sync (ORM and storage)."""
    from capabilities.media import history as media_history

    if run.conversation_id is None:
        return
    tree, offloaded = media_history.offload(
        messages, threshold_bytes=threshold_bytes, organization_id=run.organization_id,
        conversation_id=run.conversation_id, run_id=run.pk)
    values = {"run_id": run.pk, "messages": tree, "media": offloaded, "through_message_id": through_message_id,
              "updated_at": timezone.now()}
    # The newer dump wins: a run that finished late never puts back a history a later turn's summary replaced.
    mine = CompactedHistory.objects.filter(conversation_id=run.conversation_id, organization_id=run.organization_id)
    if mine.filter(through_message_id__lte=through_message_id).update(**values):
        return
    try:
        with transaction.atomic():
            CompactedHistory.objects.create(conversation_id=run.conversation_id,
                                            organization_id=run.organization_id, **values)
    except IntegrityError:  # a newer dump is already there
        logger.info("run %s: a newer compacted history of its conversation is kept", run.pk)


def keep_after_run(handle: RunHandle, messages: list[ModelMessage], message_id: int | None) -> None:
    """The `keep_history` hook: a run whose history a strategy compacted keeps its messages on its conversation
    for the next turns. The run is over and answered: a failure here is logged, and the next turn reads the
    transcript as any other."""
    from capabilities.media import threshold_of

    run = handle.run
    if handle.deps is None or not was_compacted(handle.deps.scratch) or not run.conversation_id:
        return
    try:
        through = message_id or newest_covered(run)
        if through is not None:
            keep(run, messages, through_message_id=through, threshold_bytes=threshold_of(handle.built_capabilities))
    except Exception:
        logger.warning("run %s: its compacted history could not be kept for the next turn", run.pk, exc_info=True)


def newest_covered(run: Run) -> int | None:
    """The run's own newest transcript message (what a dump of it covers), when its answer wrote none."""
    return (Message.objects.filter(run_id=run.pk).order_by("-id").values_list("id", flat=True).first())


def through_annotation(run: Run) -> Subquery:
    """The kept dump's `through_message_id`, for the history's own read (no statement of its own on a turn):
    None when the conversation keeps none, or when that message is gone (retention swept it, so the dump quotes
    words past their period)."""
    conversation_id = run.conversation_id
    assert conversation_id is not None  # a run without a conversation reads no stored history
    covered = Message.objects.filter(pk=OuterRef("through_message_id"), conversation_id=conversation_id)
    kept = CompactedHistory.objects.filter(conversation_id=conversation_id, organization_id=run.organization_id)
    return Subquery(kept.filter(Exists(covered)).values("through_message_id")[:1])


def replayed(run: Run) -> tuple[int, list[ModelMessage]] | None:
    """The conversation's kept dump, its media put back, and the message id it covers through; None when there is
    none or it no longer loads (the turn then rebuilds its history from the transcript, as any other)."""
    from capabilities.media import history as media_history

    if run.conversation_id is None:
        return None
    row = (CompactedHistory.objects.filter(conversation_id=run.conversation_id, organization_id=run.organization_id)
           .values("messages", "media", "through_message_id").first())
    if row is None:
        return None
    tree = row["messages"]
    if row["media"]:
        # Restored whether or not the agent is still bound: its references are in the dump either way.
        tree = media_history.restore(tree, organization_id=run.organization_id,
                                     conversation_id=run.conversation_id, run_id=run.pk)
    try:
        return row["through_message_id"], ModelMessagesTypeAdapter.validate_python(tree)
    except Exception:
        logger.warning("run %s: its conversation's compacted history no longer loads; the transcript is used",
                       run.pk, exc_info=True)
        return None


def sweep_expired(organizations: Q, cutoff: Any) -> int:
    """Dumps last written before `cutoff` in the organizations `organizations` selects (a Q on `organization`):
    their words are past the transcript period. For governance.retention's transcript sweep."""
    removed, _ = CompactedHistory.objects.filter(organizations, updated_at__lt=cutoff).delete()
    return removed


def sweep_past_period(now: datetime | None = None) -> int:
    """A conversation's kept compacted history quotes its words: one last written before the transcript period
    goes (the next turn then reads the transcript, as any other). Registered with governance.retention in
    CapabilitiesConfig.ready() (governance imports no capability)."""
    from governance import retention

    return retention._by_policy("compacted_histories", "transcript_days", "organization", now, sweep_expired)

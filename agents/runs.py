"""`start_run`: the one door every surface uses to run an agent.

It admits nothing by itself — the surface has already admitted its caller — but it enforces the
limits every surface shares (message length, the run right on the agent), records the person's
words in the transcript, creates the Run (queued) and enqueues its execution after commit.
Frames of a run go to the channel-layer group `run-<id>` (see `agents.runner.frames`).
"""

from __future__ import annotations

import logging
import uuid
from functools import partial
from typing import Any

import redis
from django.conf import settings
from django.db import transaction
from django.utils import timezone

from agenticos import ratelimit
from agenticos.errors import Invalid
from agenticos.queries import Insert, Update, write_together
from agents import branches
from agents.models import Agent, AgentVersion, Conversation, Message, Run, RunStatus

logger = logging.getLogger(__name__)


def check_prompt(prompt: str) -> str:
    text = (prompt or "").strip()
    if not text:
        raise Invalid("The message is empty.", details={"field": "text"})
    if len(text) > settings.MAX_MESSAGE_CHARS:
        raise Invalid(
            f"The message is too long ({len(text)} characters; the limit is {settings.MAX_MESSAGE_CHARS}).",
            details={"field": "text", "limit": settings.MAX_MESSAGE_CHARS},
        )
    return text


def start_run(
    *,
    agent: Agent,
    version: AgentVersion,
    surface: str,
    prompt: str,
    user=None,
    acting_role: str = "",
    conversation: Conversation | None = None,
    api_key=None,
    embed_id=None,
    chat_account: str = "",
    author_label: str = "",
    chat_identity=None,
    options: dict[str, Any] | None = None,
    run_id: uuid.UUID | None = None,
    attachments: list[dict] | None = None,
    enqueue: bool = True,
    reply_to: Message | None = None,
) -> Run:
    """Create a queued run (and the person's message, when there is a conversation), in one statement.

    `user`/`acting_role` are whose authority the run has (for an anonymous embed visitor: the
    publisher, with the role they hold now). `options` carries surface choices the runner honours:
    `history_limit`, `extra_instructions`, `can_ask_user`, `recorded_prompt` (what the person wrote
    when `prompt` was assembled around it). A `conversation` not saved yet is this turn's new one: it is
    written with the run (no conversation without its first turn, no second write to mark it active).
    `chat_identity` is the chat account that wrote a channel turn: the message records it, and `user` is its
    author only when the account is linked to that user (an unlinked sender runs under the binding's authority
    but is not the binding's creator).

    `reply_to` (regenerate, agents.branches): the run answers that earlier message of the person again and
    writes no message of its own.

    Called inside a caller's transaction, it joins it.
    """
    text = check_prompt(prompt)
    options = dict(options or {})
    if reply_to is not None:
        options["reply_to"] = reply_to.pk
    run = Run(
        id=run_id or uuid.uuid4(),
        organization_id=agent.organization_id,
        agent=agent,
        version=version,
        conversation=conversation,
        surface=surface,
        user=user,
        acting_role=acting_role,
        api_key=api_key,
        embed_id=embed_id,
        chat_account=chat_account,
        prompt=text,
        status=RunStatus.QUEUED,
        options=options,
    )
    writes: list[Insert | Update] = [Insert([run])]
    if conversation is not None:
        if conversation._state.adding:
            writes.insert(0, Insert([conversation]))
        else:
            writes.append(Update(Conversation.objects.filter(pk=conversation.pk), {"last_active_at": timezone.now()}))
    message = None
    if conversation is not None and reply_to is None:
        recorded = options.get("recorded_prompt") or text
        author = user if surface != "embed" else None
        if chat_identity is not None and (user is None or chat_identity.user_id != user.pk):
            author = None
        message = Message(
            conversation=conversation,
            # It follows the newest message on screen (agents.branches), read in this same statement.
            parent_id=branches.leaf(conversation.pk),  # type: ignore[misc]
            run=run,
            version=version,
            role=Message.Role.USER,
            author=author,
            author_label=author_label or (str(author) if author else ""),
            chat_identity=chat_identity,
            content=recorded,
            parts=[{"type": "text", "text": recorded}],
            attachments=attachments or [],
        )
        writes.append(Insert([message]))
    write_together(*writes)
    if message is not None:
        run.user_message_id = message.pk  # type: ignore[attr-defined]
    if enqueue:
        # Outside a transaction the run is already committed and this enqueues at once.
        deliver_after_commit(run.pk)
    return run


def enqueue_run(run_id: Any) -> None:
    from agents.tasks import execute_run

    execute_run.delay(str(run_id))


def deliver_after_commit(run_id: Any) -> None:
    """Send the run to the broker once the transaction that queued it commits (at once outside one). A broker that
    cannot take it now fails nothing: the run is queued in PostgreSQL, which is the truth, and the beat's sweep
    sends it again once the broker is back (agents.runner.finish.requeue_lost_runs)."""
    transaction.on_commit(partial(_deliver, run_id))


def _deliver(run_id: Any) -> None:
    try:
        enqueue_run(run_id)
    except Exception:  # kombu's OperationalError, or redis's own when the publish retries gave up
        logger.warning("could not send run %s to the broker; the sweep of lost queued runs sends it again", run_id,
                       exc_info=True)


def _stop_key(run_id) -> str:
    return f"agenticos:run-stop:{run_id}"


def request_stop(run: Run) -> None:
    """Ask a running run to stop; a queued or parked one is cancelled at once.

    The row's `cancel_requested` is the truth; a short-lived Redis key tells the executing worker within
    half a second without a database write per poll (when Redis is down, its next heartbeat finds the row)."""
    Run.objects.filter(pk=run.pk).update(cancel_requested=True)
    try:
        ratelimit.client().set(_stop_key(run.pk), b"1", ex=int(settings.RUN_STALE_AFTER.total_seconds()))
    except redis.RedisError:
        logger.warning("stop of run %s signalled through the database only (Redis unavailable)", run.pk)
    if run.status in (RunStatus.QUEUED, RunStatus.AWAITING_APPROVAL, RunStatus.AWAITING_ANSWER):
        from agents.runner.finish import cancel_parked_or_queued

        cancel_parked_or_queued(run.pk)


def stop_signalled(run_id) -> bool:
    """Whether a stop was asked for this run (the Redis signal; False when Redis cannot answer)."""
    try:
        return bool(ratelimit.client().exists(_stop_key(run_id)))
    except redis.RedisError:
        return False

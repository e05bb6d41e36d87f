"""The follow-up work: scheduled after an answer is committed, run as a Celery task on the default queue.

`after_answer(run_id, message_id)` (the runner, once the answer's statement has committed) decides whether
this answer gets suggestions — the run's version binds `follow_ups` with a `model_profile_id`, and the surface
can draw buttons (web chat, Slack, Telegram, Mattermost; never an embed: widget, hosted page, raw socket) — and
enqueues `write_follow_ups` after commit. The task:

- opens an auxiliary run (Activity: "Next steps"), outside the conversation so it never marks it busy nor
  replaces its latest run, whose cost is its own — the answer's cost does not change;
- sends one request to the chosen model with no tools and none of the agent's instructions: only a fixed
  instruction, the person's question and the stored answer; at most 512 output tokens, 15 seconds;
- goes through the platform's metered path (`governance.metered`): every cap (agent, organization, embed) is
  checked before the call — a used-up cap refuses it and nothing is shown — and the call is priced and written
  to the ledger under `follow_ups` on the auxiliary run, after an error too when a response arrived;
- keeps up to three steps on a `FollowUp` row of the answer message and tells the console (the answer run's
  group: the chat socket that asked is still in it) which conversation and message they belong to.

Four tasks at once per process; the rest are skipped (spec). No retries; a failure never touches the answer.
"""

from __future__ import annotations

import asyncio
import logging
import re
import threading
from collections.abc import Callable
from typing import Any

from django.db import transaction
from django.utils import timezone

from capabilities.follow_ups.capability import MAX_OUTPUT_TOKENS, MAX_STEPS, STEP_MAX_CHARS, TIMEOUT_SECONDS
from capabilities.follow_ups.models import FollowUp

logger = logging.getLogger(__name__)

# How a chat app posts the steps in its thread, by the run's surface: channelbots registers its platforms in
# ChannelbotsConfig.ready() (capabilities never import a surface; channelbots/follow_ups.py is the other half).
CHAT_APP_POSTERS: dict[str, Callable[[FollowUp], object]] = {}


def register_chat_app_poster(surface: str, poster: Callable[[FollowUp], object]) -> None:
    CHAT_APP_POSTERS[surface] = poster

LEDGER_KIND = "follow_ups"  # SpendEntry.kind of the follow-up call
RUN_LABEL = "Next steps"  # the auxiliary run's prompt, what Activity shows
SURFACES = frozenset({"web", "slack", "telegram", "mattermost"})
CONCURRENCY = 4
_slots = threading.BoundedSemaphore(CONCURRENCY)

# A marker the offline demo provider recognises (agents/providers/demo.py) so `make run` shows buttons.
INSTRUCTIONS = (
    "[follow-ups] You suggest what the person might ask next, after reading their question and the answer "
    f"they got. Reply with at most {MAX_STEPS} short next steps, one per line, each written as the person "
    "would type it, in the same language as the person's question. No numbering, no bullets, no other text. "
    "If nothing useful follows, reply with nothing."
)


def binding_config(spec: dict[str, Any]) -> dict[str, Any] | None:
    for binding in (spec or {}).get("capabilities") or []:
        if isinstance(binding, dict) and binding.get("id") == "follow_ups":
            return binding.get("config") or {}
    return None


def wanted(run: Any) -> bool:
    """Whether this run's answer gets follow-ups at all, from what the runner already holds (no query: the hot
    path of every other turn stays as it was)."""
    if run.conversation_id is None or run.embed_id is not None or run.surface not in SURFACES:
        return False
    return bool((binding_config(run.version.spec) or {}).get("model_profile_id"))


def after_answer(run_id: Any, message_id: int | None) -> FollowUp | None:
    """Schedule the follow-up task for this committed answer when its agent and surface call for one. Sync.
    Never raises: the answer is already the person's, suggestions are optional."""
    try:
        return _schedule(run_id, message_id)
    except Exception as exc:
        logger.warning("follow-ups not scheduled for run %s: %s", run_id, type(exc).__name__)
        return None


def _schedule(run_id: Any, message_id: int | None) -> FollowUp | None:
    from agents.models import Message, Run

    if not message_id:
        return None
    run = (Run.objects.filter(pk=run_id).select_related("version")
           .only("id", "organization_id", "conversation_id", "surface", "embed_id", "version__spec").first())
    if run is None or run.conversation_id is None or run.embed_id is not None or run.surface not in SURFACES:
        return None
    config = binding_config(run.version.spec)
    if not config or not config.get("model_profile_id"):
        return None
    message = Message.objects.filter(pk=message_id, conversation_id=run.conversation_id,
                                     role=Message.Role.ASSISTANT).first()
    if message is None or not message.content.strip():
        return None
    follow_up, created = FollowUp.objects.get_or_create(
        message=message, defaults={"organization_id": run.organization_id, "conversation_id": run.conversation_id,
                                   "source_run": run})
    if created:
        from capabilities.tasks import write_follow_ups

        transaction.on_commit(lambda: write_follow_ups.delay(follow_up.pk))
    return follow_up


def parse_steps(text: str) -> list[str]:
    steps: list[str] = []
    for line in (text or "").splitlines():
        line = re.sub(r"^\s*(?:[-*•]|\d+[.)])\s*", "", line).strip().strip('"').strip()
        if line and line not in steps:
            steps.append(line[:STEP_MAX_CHARS])
    return steps[:MAX_STEPS]


def write(follow_up_id: int) -> str:
    """The task's body. Returns the FollowUp's final status. Sync (ORM); the model call runs on its own loop."""
    if not _slots.acquire(blocking=False):
        FollowUp.objects.filter(pk=follow_up_id, status=FollowUp.Status.PENDING).update(
            status=FollowUp.Status.SKIPPED)
        return FollowUp.Status.SKIPPED
    try:
        return _write(follow_up_id)
    finally:
        _slots.release()


def _write(follow_up_id: int) -> str:
    from agents.models import Message, ModelProfile, Run, RunStatus
    from governance import budgets, metered

    follow_up = (FollowUp.objects.select_related("source_run", "source_run__version", "message")
                 .filter(pk=follow_up_id, status=FollowUp.Status.PENDING).first())
    if follow_up is None:
        return ""
    source = follow_up.source_run
    config = binding_config(source.version.spec) or {}
    question = (Message.objects.filter(conversation_id=follow_up.conversation_id, role=Message.Role.USER,
                                       id__lt=follow_up.message_id).order_by("-id").values_list("content", flat=True)
                .first()) or source.prompt
    aux = Run.objects.create(
        organization_id=source.organization_id, agent_id=source.agent_id, version_id=source.version_id,
        surface=source.surface, user_id=source.user_id, acting_role=source.acting_role,
        chat_account=source.chat_account, prompt=RUN_LABEL, status=RunStatus.RUNNING, started_at=timezone.now(),
        options={"follow_ups": {"conversation_id": str(follow_up.conversation_id),
                                "message_id": follow_up.message_id, "source_run_id": str(source.pk)}})
    FollowUp.objects.filter(pk=follow_up.pk).update(run=aux)
    status, steps, run_status, error, output = FollowUp.Status.FAILED, [], RunStatus.FAILED, {}, ""
    try:
        profile_id = str(config.get("model_profile_id") or "")
        profile = (ModelProfile.objects.select_related("secret")
                   .filter(pk=profile_id, organization_id=source.organization_id,
                           kind=ModelProfile.Kind.CHAT).first()) if profile_id else None
        if profile is None:
            raise LookupError("The model profile chosen for next steps no longer exists.")
        from agents.providers import build_model

        model = build_model(profile)
        meter = metered.for_run(aux.pk, source.organization_id, kind=LEDGER_KIND)
        text = asyncio.run(_ask(meter, model, question, follow_up.message.content))
        steps = parse_steps(text)
        output = "\n".join(steps)
        status = FollowUp.Status.READY if steps else FollowUp.Status.EMPTY
        run_status = RunStatus.COMPLETED
    except budgets.BudgetExceeded as exc:
        status, run_status, error = FollowUp.Status.REFUSED, RunStatus.BUDGET_EXCEEDED, {"message": str(exc)}
    except Exception as exc:  # any failure: no buttons, the answer stays as it is
        logger.warning("follow-ups %s failed: %s", follow_up_id, type(exc).__name__)
        error = {"message": "The next steps could not be written.", "type": type(exc).__name__}
    Run.objects.filter(pk=aux.pk).update(status=run_status, output=output, error=error, finished_at=timezone.now())
    FollowUp.objects.filter(pk=follow_up.pk).update(status=status, steps=steps)
    if status == FollowUp.Status.READY:
        follow_up.steps = steps
        deliver(follow_up)
    return status


async def _ask(meter: Any, model: Any, question: str, answer: str) -> str:
    from pydantic_ai.messages import ModelRequest, SystemPromptPart, TextPart, UserPromptPart
    from pydantic_ai.models import ModelRequestParameters

    from governance import metered

    request = ModelRequest(parts=[
        SystemPromptPart(content=INSTRUCTIONS),
        UserPromptPart(content=f"The person asked:\n{question}\n\nThe answer they got:\n{answer}"),
    ])
    response = await asyncio.wait_for(metered.model_request(
        meter, model, [request],
        model_settings={"max_tokens": MAX_OUTPUT_TOKENS, "timeout": TIMEOUT_SECONDS},
        model_request_parameters=ModelRequestParameters(function_tools=[], allow_text_output=True),
    ), timeout=TIMEOUT_SECONDS)
    return "".join(part.content for part in response.parts if isinstance(part, TextPart))


def turn_payload(follow_up: FollowUp) -> dict[str, Any]:
    return {"conversation_id": str(follow_up.conversation_id), "message_id": follow_up.message_id,
            "run_id": str(follow_up.source_run_id), "steps": list(follow_up.steps)}


def deliver(follow_up: FollowUp) -> None:
    """Tell the console (the answer run's group) and, for a chat app, post the buttons in the reply's thread."""
    from asgiref.sync import async_to_sync
    from channels.layers import get_channel_layer

    from agents.run_handle import frame, group_name

    layer = get_channel_layer()
    if layer is not None:
        try:
            async_to_sync(layer.group_send)(group_name(follow_up.source_run_id), {
                "type": "run.frame", "frame": frame("follow_ups", **turn_payload(follow_up))})
        except Exception as exc:  # the steps are stored; a reopened chat still shows them
            logger.warning("follow-ups frame not sent: %s", type(exc).__name__)
    poster = CHAT_APP_POSTERS.get(follow_up.source_run.surface)
    if poster is not None:
        poster(follow_up)

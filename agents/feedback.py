"""👍/👎 with an optional comment on an answer, by the person whose conversation it is: one per person and
message, stored with the run that wrote the answer (Activity lists them; evals.services.case_from_feedback turns a
👎 into an evaluation case)."""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from agenticos.errors import Invalid, NotFound
from agenticos.tenancy import Actor, org_get
from agents.models import Feedback, Message

COMMENT_MAX = 2000


def _answer(actor: Actor, conversation_id: Any, message_id: Any) -> Message:
    from agents.chat import own_conversation

    conversation = own_conversation(actor, conversation_id, draft=False)
    try:
        return Message.objects.select_related("conversation").get(conversation=conversation, pk=int(message_id),
                                                                   role=Message.Role.ASSISTANT)
    except (TypeError, ValueError, Message.DoesNotExist):
        raise NotFound("Answer not found.") from None


def clean(rating: object, comment: object) -> tuple[str, str]:
    if rating not in Feedback.Rating.values:
        raise Invalid("A rating is 'up' or 'down'.", details={"problems": [{"field": "rating",
                                                                            "message": "'up' or 'down'."}]})
    text = comment.strip() if isinstance(comment, str) else ""
    if len(text) > COMMENT_MAX:
        raise Invalid(f"A comment has at most {COMMENT_MAX} characters.",
                      details={"problems": [{"field": "comment", "message": f"At most {COMMENT_MAX} characters."}]})
    return str(rating), text


def give(*, actor: Actor, conversation_id: Any, message_id: Any, rating: object, comment: object = "") -> Feedback:
    """Rate an answer of one's own conversation (again: the new rating and comment replace the old)."""
    actor.require("agents:run")
    message = _answer(actor, conversation_id, message_id)
    rating, text = clean(rating, comment)
    with transaction.atomic():
        feedback, _created = Feedback.objects.update_or_create(
            message=message, user=actor.user,
            defaults={"rating": rating, "comment": text, "updated_at": timezone.now()},
            create_defaults={"rating": rating, "comment": text, "organization": actor.organization,
                             "agent_id": message.conversation.agent_id, "run_id": message.run_id})
    _rated(rating, message)
    return feedback


def _rated(rating: str, message: Message) -> None:
    if rating == Feedback.Rating.DOWN and message.run_id:
        # A 👎 on an answer of a rollout's run counts toward its 👎 threshold now, not at the beat's next look.
        from agents.rollouts import answer_rated

        transaction.on_commit(lambda: answer_rated(message.run_id))


def run_answer(run: Any) -> Message | None:
    """The answer a rating of a whole run lands on: its first answer on the branch on screen — the one web chat
    puts 👍/👎 under (the turn's head). None when the run wrote none."""
    return (Message.objects.filter(run_id=run.pk, conversation_id=run.conversation_id, role=Message.Role.ASSISTANT,
                                   on_branch=True).select_related("conversation").order_by("id").first())


def give_outside(*, message: Message, source: str, rater: str, rater_label: str, rating: object,
                 comment: object = "") -> Feedback:
    """A rating by someone who has no account (an embed's visitor, a chat account's reaction). The surface has
    already decided that `message` is an answer of the rater's own conversation; this stores it like a member's."""
    rating, text = clean(rating, comment)
    conversation = message.conversation
    with transaction.atomic():
        feedback, _created = Feedback.objects.update_or_create(
            message=message, user=None, rater=rater,
            defaults={"rating": rating, "comment": text, "rater_label": rater_label[:200], "source": source,
                      "updated_at": timezone.now()},
            create_defaults={"rating": rating, "comment": text, "rater_label": rater_label[:200], "source": source,
                             "organization_id": conversation.organization_id, "agent_id": conversation.agent_id,
                             "run_id": message.run_id})
    _rated(rating, message)
    return feedback


def withdraw_outside(*, message: Message, rater: str) -> None:
    Feedback.objects.filter(message=message, user=None, rater=rater).delete()


def withdraw(*, actor: Actor, conversation_id: Any, message_id: Any) -> None:
    actor.require("agents:run")
    message = _answer(actor, conversation_id, message_id)
    Feedback.objects.filter(message=message, user=actor.user).delete()


def organization_feedback(actor: Actor) -> QuerySet[Feedback]:
    """What Activity lists: the organization's feedback with runs:view, else one's own."""
    qs = Feedback.objects.filter(organization=actor.organization).select_related("agent", "user", "run", "message")
    return qs if actor.has("runs:view") else qs.filter(user_id=actor.user_id)


def feedback_for(actor: Actor, feedback_id: Any) -> Feedback:
    return org_get(actor, Feedback, feedback_id, queryset=organization_feedback(actor))

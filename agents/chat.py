"""Member runs (web chat and the REST API): admission shared by the socket and the endpoint."""

from __future__ import annotations

import functools
import uuid
from dataclasses import dataclass

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from agenticos import audit, ratelimit
from agenticos.errors import Conflict, Invalid, RateLimited
from agenticos.tenancy import Actor, org_get
from agents import branches, rollouts, titles

# Who may read which run and conversation sits below the capabilities now (agents/access.py); callers still say chat.
from agents.access import member_run as member_run
from agents.access import readable_conversation as readable_conversation
from agents.access import readable_conversations as readable_conversations
from agents.drafts import DRAFT, DRAFT_CONVERSATION_KEY, freeze_draft
from agents.models import TERMINAL_STATUSES, Agent, Conversation, Message, Run
from agents.runs import check_prompt, start_run
from agents.services import agent_version_and_rollout
from agents.titles import conversation_title
from agents.uploads import claim_chat_uploads
from governance.grants import USE


@dataclass
class Admitted:
    agent: Agent
    conversation: Conversation | None
    created_conversation: bool
    user_message_id: int | None = None


def check_run_rate(actor: Actor) -> None:
    identity = f"key:{actor.api_key.pk}" if actor.api_key else f"user:{actor.user_id}"
    allowed, retry_after = ratelimit.hit("run", identity, settings.RATE_LIMIT_RUN_PER_MINUTE)
    if not allowed:
        raise RateLimited(
            f"Too many runs: the limit is {settings.RATE_LIMIT_RUN_PER_MINUTE} per minute.", retry_after=retry_after
        )


def own_conversation(actor: Actor, conversation_id, agent: Agent | None = None, *,
                     draft: bool | None = None) -> Conversation:
    """One of the person's own conversations; `draft` True/False: only a Builder test one / only another."""
    qs = Conversation.objects.filter(organization=actor.organization, owner_id=actor.user_id)
    if agent is not None:
        qs = qs.filter(agent=agent)
    if draft is not None:
        qs = qs.filter(external_key=DRAFT_CONVERSATION_KEY) if draft else qs.exclude(external_key=DRAFT_CONVERSATION_KEY)
    conversation = org_get(actor, Conversation, conversation_id, queryset=qs)
    return conversation


def delete_conversation(*, actor: Actor, conversation_id, ip_address: str | None = None) -> None:
    """A person deletes their own conversation: its messages, its runs (the spend they made stays in the ledger:
    SpendEntry.run goes null), its run and conversation workspaces (by foreign key) and its uploaded files —
    queued in this transaction by governance.retention's pre_delete receiver, removed from storage right after
    commit. Refused while one of its runs is queued, running or waiting for a decision."""
    actor.require("agents:run")
    with transaction.atomic():
        conversation = own_conversation(actor, conversation_id)
        conversation = Conversation.objects.select_for_update().get(pk=conversation.pk)
        if Run.objects.filter(conversation=conversation).exclude(status__in=list(TERMINAL_STATUSES)).exists():
            raise Conflict("A run of this conversation is still going or waiting for a decision: stop it first.",
                           code="run_active")
        audit.record(actor=actor.user, organization=actor.organization, action="conversation.deleted",
                     target=conversation, details={
                         "agent_id": str(conversation.agent_id),
                         "messages": Message.objects.filter(conversation=conversation).count(),
                         "runs": Run.objects.filter(conversation=conversation).count()}, ip_address=ip_address)
        conversation.delete()


def start_member_run(
    *,
    actor: Actor,
    agent_id,
    text: str,
    surface: str,
    conversation_id=None,
    create_conversation: bool,
    environment: str = "production",
    run_id: uuid.UUID | None = None,
    can_ask_user: bool = False,
    extra_instructions: str = "",
    client_history: list[dict[str, str]] | None = None,
    attachment_ids: object = None,
    edit_of: object = None,
) -> tuple[Run, Admitted]:
    """Every member surface's admission (web chat, the REST run endpoint, the OpenAI-compatible and MCP
    endpoints): the run right, prompt limits, the agent's environment at USE, the caller's own conversation,
    the per-key rate limit on the API, then start_run. `extra_instructions` is added to the agent's own
    (start_run's option), never in their place. `environment="draft"` (the Builder's test chat) runs a frozen
    snapshot of the draft, for editors only, in a conversation of its own (agents.drafts). `attachment_ids` are
    the sender's own uploads (agents.uploads), attached to the message at most once. `edit_of` (one of the
    person's messages on screen in `conversation_id`): the text is an edited version of it, a sibling that forks
    the conversation from there (agents.branches), keeping its files when no new ones come."""
    actor.require("agents:run")
    admit = functools.partial(_admit_and_start, actor=actor, agent_id=agent_id, text=text, surface=surface,
                              conversation_id=conversation_id, create_conversation=create_conversation,
                              environment=environment, run_id=run_id, can_ask_user=can_ask_user,
                              extra_instructions=extra_instructions, client_history=client_history)
    if edit_of is not None:
        with transaction.atomic():
            edited = branches.message_to_edit(actor=actor, conversation_id=conversation_id, message_id=edit_of)
            return admit(attachments=claim_chat_uploads(actor, attachment_ids) if attachment_ids
                         else list(edited.attachments or []))
    if not attachment_ids:
        return admit(attachments=[])  # the hot path: no transaction of its own (start_run writes in one statement)
    with transaction.atomic():  # the files are claimed by the message that carries them, or by none
        return admit(attachments=claim_chat_uploads(actor, attachment_ids))


def _admit_and_start(*, actor: Actor, agent_id, text: str, surface: str, conversation_id, create_conversation: bool,
                     environment: str, run_id: uuid.UUID | None, can_ask_user: bool, extra_instructions: str,
                     client_history: list[dict[str, str]] | None, attachments: list[dict],
                     reply_to: Message | None = None) -> tuple[Run, Admitted]:
    if attachments and not (text or "").strip():
        text = attachment_caption(attachments)
    text = check_prompt(text)
    draft = environment == DRAFT
    if draft:
        agent = org_get(actor, Agent, agent_id)
        version = freeze_draft(actor, agent)
        rollout_id = None
    else:
        agent, version, rollout_id = agent_version_and_rollout(actor=actor, agent_id=agent_id,
                                                               environment=environment, level=USE)
    conversation = None
    if conversation_id:
        conversation = own_conversation(actor, conversation_id, agent, draft=draft)
    if surface == "api":
        check_run_rate(actor)
    created = not conversation_id and create_conversation
    if created:  # written with the run: no conversation without its first turn
        conversation = Conversation(
            organization=actor.organization, agent=agent, owner=actor.user, surface=surface,
            title=conversation_title(text),
            external_key=DRAFT_CONVERSATION_KEY if draft else "",
        )
    run_id = run_id or uuid.uuid4()
    served = None if draft else rollouts.route(
        base=version, rollout_id=rollout_id, conversation=conversation,
        # The sticky key: the conversation (new or not), else the run itself (a one-off REST / `/v1` call).
        key=str(conversation.pk if conversation is not None else run_id))
    if served is not None:
        version = served.version
    if attachments and conversation is None:
        # The message is where a file is kept (and read back from, and deleted with): no message, no file.
        raise Invalid("Files are attached to a message of a conversation.", details={"field": "attachment_ids"})
    run = start_run(
        agent=agent,
        version=version,
        surface=surface,
        prompt=text,
        user=actor.user,
        acting_role=actor.role or "",
        conversation=conversation,
        api_key=actor.api_key,
        run_id=run_id,
        attachments=attachments,
        reply_to=reply_to,
        options={"can_ask_user": can_ask_user, **({"draft": True} if draft else {}),
                 **({"extra_instructions": extra_instructions} if extra_instructions else {}),
                 **(served.options() if served is not None else {}),
                 # The conversation's first turn: once answered, the title model may title it (agents.titles).
                 **({"first_turn": True} if created else {}),
                 # A client that sends the conversation itself (the OpenAI-compatible API): its earlier turns,
                 # the model's history when the run has no stored conversation (runner.assembly.turn_and_history).
                 **({"client_history": client_history} if client_history and not conversation else {})},
    )
    message_id = getattr(run, "user_message_id", None)
    return run, Admitted(agent, conversation, created, message_id)


def regenerate_answer(*, actor: Actor, conversation_id, message_id, surface: str = "web",
                      run_id: uuid.UUID | None = None, can_ask_user: bool = False) -> tuple[Run, Admitted]:
    """Answer again in place: the answer (and what followed it) leaves the branch on screen, and a new run answers
    the same message of the person with the conversation's agent; the new answer is the old one's sibling
    (agents.branches). Only the owner, only while nothing of the conversation runs."""
    actor.require("agents:run")
    with transaction.atomic():
        conversation, asked = branches.answer_to_regenerate(actor=actor, conversation_id=conversation_id,
                                                            message_id=message_id)
        return _admit_and_start(actor=actor, agent_id=conversation.agent_id, text=asked.content, surface=surface,
                                conversation_id=conversation.pk, create_conversation=False,
                                environment="production", run_id=run_id, can_ask_user=can_ask_user,
                                extra_instructions="", client_history=None, attachments=[], reply_to=asked)


def attachment_caption(attachments: list[dict]) -> str:
    """What a message with files and no words says: what arrived ("Attached image: photo.jpg"), never blank —
    a blank message from the person reads as someone who sent nothing."""
    images = [a["name"] for a in attachments if str(a["mime"]).startswith("image/")]
    others = [a["name"] for a in attachments if not str(a["mime"]).startswith("image/")]
    lines = []
    if images:
        lines.append(f"Attached image{'s' if len(images) > 1 else ''}: {', '.join(images)}")
    if others:
        lines.append(f"Attached file{'s' if len(others) > 1 else ''}: {', '.join(others)}")
    return "\n".join(lines)


TITLE_MAX = Conversation._meta.get_field("title").max_length or 200


def clean_title(title: object) -> str:
    """A title of 1–200 characters once trimmed (one rule for the API and the console's form)."""
    text = title.strip() if isinstance(title, str) else ""
    if not text or len(text) > TITLE_MAX:
        raise Invalid(f"A title has 1 to {TITLE_MAX} characters.",
                      details={"problems": [{"field": "title", "message": f"1 to {TITLE_MAX} characters."}]})
    return text


def _locked_own(actor: Actor, conversation_id) -> Conversation:
    conversation = own_conversation(actor, conversation_id, draft=False)
    return Conversation.objects.select_for_update().get(pk=conversation.pk)


def rename_conversation(*, actor: Actor, conversation_id, title: object, ip_address: str | None = None) -> Conversation:
    """The owner renames their conversation; anyone else (same organization or not) gets 404."""
    actor.require("agents:run")
    with transaction.atomic():
        conversation = _locked_own(actor, conversation_id)
        new_title = clean_title(title)
        if new_title != conversation.title:
            audit.record(actor=actor.user, organization=actor.organization, action="conversation.renamed",
                         target=conversation, details={"from": conversation.title, "to": new_title},
                         ip_address=ip_address)
            conversation.title = new_title
            conversation.title_by = titles.TITLE_BY_PERSON  # never replaced by the title model
            conversation.save(update_fields=["title", "title_by"])
    return conversation


def pin_conversation(*, actor: Actor, conversation_id, pinned: bool) -> Conversation:
    """The owner pins their conversation to the top of their list (or unpins it). A list preference: no audit."""
    actor.require("agents:run")
    with transaction.atomic():
        conversation = _locked_own(actor, conversation_id)
        if pinned != (conversation.pinned_at is not None):
            conversation.pinned_at = timezone.now() if pinned else None
            conversation.save(update_fields=["pinned_at"])
    return conversation


TAGS_MAX = 10
TAG_MAX_LENGTH = 40


def clean_tags(tags: object) -> list[str]:
    """A conversation's tags as stored: trimmed, lower-cased (one tag, however typed), inner spaces kept single,
    duplicates and empties dropped, order kept; at most TAGS_MAX of at most TAG_MAX_LENGTH characters."""
    if not isinstance(tags, list) or not all(isinstance(tag, str) for tag in tags):
        raise Invalid("tags must be a list of strings.", details={"field": "tags"})
    cleaned: list[str] = []
    for tag in tags:
        if not all(ch.isprintable() or ch.isspace() for ch in tag):
            raise Invalid("A tag is printable text.", details={"field": "tags"})
        tag = " ".join(tag.split()).lower()
        if len(tag) > TAG_MAX_LENGTH:
            raise Invalid(f"A tag has at most {TAG_MAX_LENGTH} characters.", details={"field": "tags"})
        if tag and tag not in cleaned:
            cleaned.append(tag)
    if len(cleaned) > TAGS_MAX:
        raise Invalid(f"A conversation has at most {TAGS_MAX} tags.", details={"field": "tags"})
    return cleaned


def archive_conversation(*, actor: Actor, conversation_id, archived: bool) -> Conversation:
    """The owner archives their conversation (it leaves their chat list and the API's default list for their
    Archived view, and stays readable and open to new messages there) or unarchives it. A list preference, like a
    pin: no audit."""
    actor.require("agents:run")
    with transaction.atomic():
        conversation = _locked_own(actor, conversation_id)
        if archived != (conversation.archived_at is not None):
            conversation.archived_at = timezone.now() if archived else None
            conversation.save(update_fields=["archived_at"])
    return conversation


def tag_conversation(*, actor: Actor, conversation_id, tags: object) -> Conversation:
    """The owner sets their conversation's tags (the whole list: [] removes them all). No audit, like a pin."""
    actor.require("agents:run")
    cleaned = clean_tags(tags)
    with transaction.atomic():
        conversation = _locked_own(actor, conversation_id)
        if cleaned != conversation.tags:
            conversation.tags = cleaned
            conversation.save(update_fields=["tags"])
    return conversation


_UNCHANGED = object()


def change_conversation(*, actor: Actor, conversation_id, title: object = _UNCHANGED, pinned: object = _UNCHANGED,
                        archived: object = _UNCHANGED, tags: object = _UNCHANGED,
                        ip_address: str | None = None) -> Conversation:
    """Several of the owner's changes at once (`PATCH /conversations/{id}`): all of them or none — a bad tag
    after a good archive leaves the conversation as it was."""
    conversation: Conversation | None = None
    with transaction.atomic():
        if title is not _UNCHANGED:
            conversation = rename_conversation(actor=actor, conversation_id=conversation_id, title=title,
                                               ip_address=ip_address)
        if pinned is not _UNCHANGED:
            conversation = pin_conversation(actor=actor, conversation_id=conversation_id, pinned=bool(pinned))
        if archived is not _UNCHANGED:
            conversation = archive_conversation(actor=actor, conversation_id=conversation_id,
                                                archived=bool(archived))
        if tags is not _UNCHANGED:
            conversation = tag_conversation(actor=actor, conversation_id=conversation_id, tags=tags)
    return conversation if conversation is not None else own_conversation(actor, conversation_id, draft=False)

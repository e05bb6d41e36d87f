"""A conversation's title: the first message's words at once, then — when the organization picked a title model
(Settings → Chat, agents.ChatSettings) — a title that model writes after the first exchange; its owner can rename
it, and a person's title is never replaced.

The first-message title: the first line that has words in it, its markdown marks taken off (headings, emphasis,
code fences and backticks, list and quote markers, links and images kept as their text; an underscore inside a
word is not emphasis, so `create_chart` stays whole), whitespace folded, and cut at a word boundary with an
ellipsis.

The model's title goes through the one metered path (governance.metered: every cap checked before, the spend in
the ledger after, kind "title"), and is cleaned the same way: one line, no quotes, no markdown.
"""

from __future__ import annotations

import asyncio
import logging
import re
from typing import Any

from django.db import transaction
from markdown_it import MarkdownIt
from markdown_it.token import Token

logger = logging.getLogger(__name__)

MAX_TITLE = 60
FALLBACK = "New conversation"

# CommonMark's own reading of the message (markdown-it-py, the parser `rich` and MyST use) instead of regexes:
# emphasis, code spans, links, headings, lists, quotes and fences are what a Markdown renderer says they are
# (`create_chart` keeps its underscore), and only the visible text is kept.
_MARKDOWN = MarkdownIt("commonmark")
_TASK_BOX = re.compile(r"^\[[ xX]\]\s+")  # a GitHub task list's box, which CommonMark leaves as text
_HTML_TAG = re.compile(r"</?[A-Za-z][^>]*>")
_SPACE = re.compile(r"\s+")


def _visible_lines(token: Token) -> list[str]:
    """An inline token's text as a person reads it, one entry per line (soft and hard breaks end a line); HTML
    tags are dropped, an image is its alt text, a link its text."""
    lines, current = [], []
    for child in token.children or []:
        if child.type in ("text", "code_inline"):
            current.append(child.content)
        elif child.type == "image":
            current.append(child.content)  # the alt text
        elif child.type in ("softbreak", "hardbreak"):
            lines.append("".join(current))
            current = []
        elif child.type == "html_inline":
            current.append(" ")  # a tag's place (<br>, <b>) is not glued to the words around it
    lines.append("".join(current))
    return [_SPACE.sub(" ", line).strip() for line in lines]


def _readable(text: str) -> tuple[list[str], list[str]]:
    """(the lines of prose in reading order, the lines of code and raw HTML) of a Markdown text."""
    prose: list[str] = []
    code: list[str] = []
    for token in _MARKDOWN.parse(text or ""):
        if token.type == "inline":
            prose.extend(_TASK_BOX.sub("", line) for line in _visible_lines(token))
        elif token.type in ("fence", "code_block"):
            code.extend(token.content.splitlines())
        elif token.type == "html_block":
            code.extend(_HTML_TAG.sub("", token.content).splitlines())
    return prose, code


def _has_words(line: str) -> bool:
    return any(ch.isalnum() for ch in line)


def conversation_title(text: str, *, limit: int = MAX_TITLE) -> str:
    """The readable title of a conversation whose first message is `text` (FALLBACK when it has no words)."""
    prose, code = _readable(text)
    for line in prose:
        if _has_words(line):
            return shorten(line, limit)
    # Only code (or nothing): the first line of code is still better than nothing.
    for line in code:
        line = _SPACE.sub(" ", line).strip()
        if _has_words(line):
            return shorten(line, limit)
    return FALLBACK


def plain_line(line: str) -> str:
    """One line's text without its Markdown marks."""
    prose, code = _readable(line)
    return next((text for text in (*prose, *code) if text), "")


def shorten(line: str, limit: int) -> str:
    if len(line) <= limit:
        return line
    cut = line[: limit - 1]
    space = cut.rfind(" ")
    if space >= limit // 2:
        cut = cut[:space]
    return cut.rstrip(" ,;:.-–—") + "…"


# --------------------------------------------------------------- the model's title

LEDGER_KIND = "title"
TITLE_BY_MODEL, TITLE_BY_PERSON = "model", "person"
TIMEOUT_SECONDS = 20
INSTRUCTIONS = (
    "Write a title for this conversation: 2 to 6 words in the language the person wrote in, naming its subject. "
    "Plain text on one line: no quotes, no markdown, no final full stop."
)


def run_ended(run: Any, status: str) -> None:
    """The run-ended hook (agents.extensions): the first exchange of a web chat conversation is answered — ask
    for its title after commit. No query: the run's options say whether it was the conversation's first turn."""
    if status != "completed" or run.conversation_id is None or not (run.options or {}).get("first_turn"):
        return
    from agents.tasks import write_title

    conversation_id, run_id = str(run.conversation_id), str(run.pk)
    transaction.on_commit(lambda: write_title.delay(conversation_id, run_id))


def clean_model_title(text: str) -> str:
    for line in (text or "").splitlines():
        line = plain_line(line).strip(" \"'“”‘’«»`").rstrip(".")
        if any(ch.isalnum() for ch in line):
            return shorten(line, MAX_TITLE)
    return ""


def write_title(conversation_id: Any, run_id: Any = None) -> str:
    """The task's body: the title model's title for a conversation still titled by its first message. Returns
    what it did ("off", "kept", "written", "refused", "failed"). Sync (ORM); the call runs on its own loop."""
    from agents.models import ChatSettings, Conversation, Message
    from agents.providers import build_model
    from governance import budgets, metered

    conversation = Conversation.objects.filter(pk=conversation_id).values(
        "organization_id", "agent_id", "title_by").first()
    if conversation is None or conversation["title_by"]:
        return "kept"
    chosen = (ChatSettings.objects.select_related("title_profile", "title_profile__secret")
              .filter(organization_id=conversation["organization_id"]).first())
    profile = chosen.title_profile if chosen is not None else None
    if profile is None:
        return "off"
    exchange = list(Message.objects.filter(conversation_id=conversation_id, on_branch=True)
                    .exclude(content="").order_by("id").values_list("role", "content")[:2])
    if not exchange:
        return "kept"
    meter = metered.for_agent(conversation["organization_id"], conversation["agent_id"], kind=LEDGER_KIND,
                              surface="web")
    try:
        text = asyncio.run(_ask(meter, build_model(profile), exchange))
    except budgets.BudgetExceeded:
        return "refused"
    except Exception as exc:  # no title from the model: the first message's stays
        logger.warning("title of conversation %s failed: %s", conversation_id, type(exc).__name__)
        return "failed"
    title = clean_model_title(text)
    if not title:
        return "failed"
    # A person's title given meanwhile wins: only a title still written by the first message is replaced.
    if not Conversation.objects.filter(pk=conversation_id, title_by="").update(title=title, title_by=TITLE_BY_MODEL):
        return "kept"
    if run_id:
        _tell_the_chat(str(run_id), str(conversation_id), title)
    return "written"


async def _ask(meter: Any, model: Any, exchange: list[tuple[str, str]]) -> str:
    from pydantic_ai.messages import ModelRequest, SystemPromptPart, TextPart, UserPromptPart
    from pydantic_ai.models import ModelRequestParameters

    from governance import metered

    said = "\n\n".join(f"{'The person' if role == 'user' else 'The assistant'}: {content[:2000]}"
                        for role, content in exchange)
    request = ModelRequest(parts=[SystemPromptPart(content=INSTRUCTIONS), UserPromptPart(content=said)])
    response = await asyncio.wait_for(metered.model_request(
        meter, model, [request], model_settings={"max_tokens": 40, "timeout": TIMEOUT_SECONDS},
        model_request_parameters=ModelRequestParameters(function_tools=[], allow_text_output=True),
    ), timeout=TIMEOUT_SECONDS)
    return "".join(part.content for part in response.parts if isinstance(part, TextPart))


def _tell_the_chat(run_id: str, conversation_id: str, title: str) -> None:
    """The open chat that ran the first turn hears the new title (its list entry and heading follow)."""
    from asgiref.sync import async_to_sync
    from channels.layers import get_channel_layer

    from agents.run_handle import group_name
    from agents.runner.frames import frame

    layer = get_channel_layer()
    if layer is not None:
        async_to_sync(layer.group_send)(group_name(run_id), {"type": "run.frame", "frame": frame(
            "conversation_titled", conversation_id=conversation_id, title=title)})


def choose_title_profile(*, actor: Any, profile_id: Any) -> Any:
    """The operator picks the chat model profile that titles conversations (None: no model titles). Audited."""
    from agenticos import audit
    from agenticos.tenancy import org_get
    from agents.models import ChatSettings, ModelProfile

    actor.require("models:manage")
    profile = None
    if profile_id:
        profile = org_get(actor, ModelProfile, profile_id,
                          queryset=ModelProfile.objects.filter(organization=actor.organization,
                                                               kind=ModelProfile.Kind.CHAT))
    with transaction.atomic():
        chosen, _ = ChatSettings.objects.select_for_update().get_or_create(organization=actor.organization)
        if chosen.title_profile_id != (profile.pk if profile else None):
            chosen.title_profile = profile
            from django.utils import timezone

            chosen.updated_at = timezone.now()
            chosen.save(update_fields=["title_profile", "updated_at"])
            audit.record(actor=actor.user, organization=actor.organization, action="chat_settings.title_profile",
                         target=chosen, details={"model_profile_id": str(profile.pk) if profile else None})
    return chosen

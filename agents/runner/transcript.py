"""What the runner writes while a run streams: tool calls as they happen, the answer's parts in order.

`parts` is `[{type: text|thinking, text} | {type: tool, tool_call_id}]` in streamed order — the same
order the frames went out — so a reopened turn renders exactly as it did live.
"""

from __future__ import annotations

from typing import Any

from django.db.models import BigIntegerField, Case, F, Q, Value, When
from django.db.models.functions import Coalesce
from django.utils import timezone

from agenticos.queries import Insert, Update, returned, write_together
from agents import branches
from agents.models import Conversation, Message, Run, ToolCall
from agents.run_handle import jsonable, result_for_storage, started_in_background


class Transcript:
    def __init__(self, run: Run, tool_capabilities: dict[str, str] | None = None):
        self.run = run
        self.parts: list[dict[str, Any]] = []
        self.tool_capabilities = tool_capabilities or {}
        self._open_key: tuple[int, int] | None = None

    # ---- streamed parts (in memory until the turn ends)

    def add_text(self, kind: str, text: str, key: tuple[int, int]) -> None:
        if not text:
            return
        if self.parts and self._open_key == key and self.parts[-1]["type"] == kind:
            self.parts[-1]["text"] += text
        else:
            self.parts.append({"type": kind, "text": text})
            self._open_key = key

    def add_tool(self, tool_call_id: str) -> None:
        # Once per call: a resumed run announces again a call its checkpoint already holds (re-run, read-only).
        if not any(p["type"] == "tool" and p["tool_call_id"] == tool_call_id for p in self.parts):
            self.parts.append({"type": "tool", "tool_call_id": tool_call_id})
        self._open_key = None

    @property
    def text(self) -> str:
        return "".join(p["text"] for p in self.parts if p["type"] == "text")

    @property
    def thinking(self) -> str:
        return "\n\n".join(p["text"] for p in self.parts if p["type"] == "thinking")

    # ---- database writes (called through the run's DB executor)

    def tool_started(self, tool_call_id: str, tool_name: str, args: Any) -> None:
        ToolCall.objects.update_or_create(
            run=self.run,
            tool_call_id=tool_call_id,
            defaults={
                "tool_name": tool_name,
                "capability_id": self.tool_capabilities.get(tool_name, ""),
                "args": jsonable(args) if isinstance(args, dict) else {"raw": str(args)},
                "status": ToolCall.Status.RUNNING,
                "started_at": timezone.now(),
            },
        )

    def tool_finished(self, tool_call_id: str, content: Any, *, ok: bool) -> None:
        if ok and started_in_background(tool_call_id, content):
            # Only the harness's "running in background" reply: the call goes on, and its row stays running
            # until the result arrives (`background_result`); a run that ends first leaves it unfinished.
            return
        ToolCall.objects.filter(run=self.run, tool_call_id=tool_call_id).update(
            result=result_for_storage(content),
            status=ToolCall.Status.OK if ok else ToolCall.Status.ERROR,
            finished_at=timezone.now(),
        )

    def tool_parked(self, tool_call_id: str) -> None:
        ToolCall.objects.filter(run=self.run, tool_call_id=tool_call_id).update(status=ToolCall.Status.PARKED)

    def save_answer(self) -> Message | None:
        """Write the assistant message for this turn (even a partial one) and link its tool calls."""
        message, writes = self.answer_writes()
        if writes:
            write_together(*writes)
        return message

    def answer_writes(self) -> tuple[Message | None, list[Insert | Update]]:
        """The assistant message for this turn (even a partial one, unsaved), and the writes that save it: its
        insert, its tool calls linked to it (one still running is unfinished), the conversation's activity —
        for the caller to carry out in one statement with its own (`write_together`)."""
        if self.run.conversation_id is None or not self.parts:
            return None, []
        message = Message(
            conversation_id=self.run.conversation_id,
            # The answer follows the newest message on screen: the person's, or this run's own earlier answer.
            parent_id=branches.leaf(self.run.conversation_id),  # type: ignore[misc]
            run=self.run,
            version_id=self.run.version_id,
            role=Message.Role.ASSISTANT,
            author_label=self.run.agent.name,
            content=self.text,
            thinking=self.thinking,
            parts=self.parts,
        )
        now = timezone.now()
        writes: list[Insert | Update] = [Insert([message], name="answer")]
        if any(p["type"] == "tool" for p in self.parts):  # every call of this execution has its part
            running = Q(status=ToolCall.Status.RUNNING)
            writes.append(Update(ToolCall.objects.filter(run=self.run), {
                "message_id": Coalesce(F("message_id"), returned("answer", "id"), output_field=BigIntegerField()),
                "status": Case(When(running, then=Value(ToolCall.Status.UNFINISHED)), default=F("status")),
                "finished_at": Case(When(running, then=Value(now)), default=F("finished_at")),
            }))
        writes.append(Update(Conversation.objects.filter(pk=self.run.conversation_id), {"last_active_at": now}))
        return message, writes

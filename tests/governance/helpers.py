"""Rows for the retention tests: conversations with runs, messages and tool calls at a chosen age."""

from __future__ import annotations

from datetime import datetime

from django.utils import timezone

from agents.models import Conversation, Message, Run, RunStatus, ToolCall


def conversation(agent, owner=None, title: str = "Chat") -> Conversation:
    return Conversation.objects.create(organization_id=agent.organization_id, agent=agent, owner=owner, title=title)


def run_in(chat: Conversation, *, at: datetime | None = None, status: str = RunStatus.COMPLETED,
           prompt: str = "what the person asked", output: str = "what the agent answered") -> Run:
    at = at or timezone.now()
    version = chat.agent.versions.order_by("-number").first()
    return Run.objects.create(
        organization_id=chat.organization_id, agent=chat.agent, version=version, conversation=chat, surface="web",
        status=status, prompt=prompt, output=output, input_tokens=120, output_tokens=45, cost_usd="0.0125",
        options={"recorded_prompt": prompt, "history_limit": 20}, created_at=at, finished_at=at,
    )


def turn(chat: Conversation, *, at: datetime | None = None, status: str = RunStatus.COMPLETED,
         attachments: list[dict] | None = None) -> tuple[Run, Message, Message, ToolCall]:
    """One exchange: the person's message, a tool call, the agent's answer."""
    at = at or timezone.now()
    run = run_in(chat, at=at, status=status)
    asked = Message.objects.create(conversation=chat, run=run, role="user", content="what the person asked",
                                   attachments=attachments or [], created_at=at)
    answer = Message.objects.create(conversation=chat, run=run, role="assistant", content="what the agent answered",
                                    created_at=at)
    call = ToolCall.objects.create(run=run, message=answer, tool_call_id=f"call-{run.pk}", tool_name="clock_now",
                                   args={"tz": "UTC"}, result={"now": "noon"}, status="ok", started_at=at)
    return run, asked, answer, call

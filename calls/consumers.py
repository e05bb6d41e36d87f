"""The call socket `/ws/call/?agent=<id>[&conversation=<id>]`: a signed-in member talks with an agent.

Thin: admit in `connect` (calls.service.admit — nothing reaches the provider before it passes), then relay.
Browser → us: `audio` (base64 PCM16, 24 kHz mono), `mute` (drop what was said since), `answer` (a card's answer),
`decide` (an approval card's decision), `hang_up`. Us → browser: `call_started`, `audio`, `caption` (live, by
delta), `turn` (a finished transcript, stored), `speech_started`, `tool`, `tool_done`, `approval`, `ask_user`,
`task_started`, `task_done`, `usage`, `error`, `call_ended`.

A connected call is a run (calls.service.start_call_run): the consumer beats it while the call lasts (a stop
asked on its page or through the API ends the call) and ends it with the call — completed on hang-up, cancelled
when the page closes or the run is stopped, failed when the provider drops it, blocked or over budget.

Every function the model calls is a `ToolCall` row of the call's run. A live tool (calls.tools) runs beside the
pump, so the call keeps relaying audio while it works. One that needs approval answers the model at once that it
waits (so the model tells the person), parks as an `Approval` of the call's run and shows the approval card; the
decision — the caller's on the card, or an approver's on the Approvals page while the call lasts — comes back on
the run's group (`approval_decided`), and then the tool runs, or not, and the call is told the outcome as a
message, the way a hand-off's result is.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import uuid
from dataclasses import replace
from typing import Any
from urllib.parse import parse_qs

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer
from channels.layers import get_channel_layer
from django.conf import settings

from agenticos import netguard, secret_access
from agenticos.errors import DomainError, NotFound
from agenticos.tenancy import SESSION_KEY, resolve_actor
from agents.consumers import CLOSE_REFUSED, BadFrame, FrameTooBig, decode_frame
from agents.models import Message
from agents.run_handle import group_name
from agents.runner.frames import FINAL_FRAME_TYPES, frame, frames_in
from calls import service, tools
from calls.realtime import RealtimeConnection, RealtimeError, error_code
from calls.tools import ToolBox
from capabilities.guardrails.screen import GuardrailBlocked
from governance.budgets import BudgetExceeded

logger = logging.getLogger(__name__)

MAX_AUDIO_CHARS = 512 * 1024  # base64 of ~8 s of 24 kHz PCM16 per frame: a browser sends 20-100 ms chunks


class CallConsumer(AsyncJsonWebsocketConsumer):
    plan: service.CallPlan | None = None
    provider: RealtimeConnection | None = None

    async def connect(self):
        user = self.scope.get("user")
        if user is None or not user.is_authenticated:
            await self.close(code=CLOSE_REFUSED)
            return
        try:
            actor = await database_sync_to_async(self._resolve)(user)
        except NotFound:
            await self.close(code=CLOSE_REFUSED)
            return
        await self.accept()
        query = parse_qs((self.scope.get("query_string") or b"").decode())
        self.pending_questions: set[str] = set()
        # call id → (tool name, arguments, approval id): gated calls waiting for a decision.
        self.pending_approvals: dict[str, tuple[str, dict[str, Any], str]] = {}
        self.ending = "left"  # why the call ends, unless something below says otherwise (the page closed)
        self.ending_detail = ""
        self.toolbox: ToolBox | None = None
        self.tasks: dict[str, asyncio.Task[None]] = {}
        try:
            self.plan = await database_sync_to_async(service.admit)(
                actor=actor, agent_id=(query.get("agent") or [""])[0],
                conversation_id=(query.get("conversation") or [None])[0])
        except DomainError as exc:
            await self._refuse(exc.code, exc.message)
            return
        except BudgetExceeded as exc:
            await self._refuse("budget_exceeded", str(exc))
            return
        # The secrets the call opens to connect (the realtime key, a tool server's token) are the run's uses,
        # audited with its row as a text run's are (agenticos.secret_access).
        with secret_access.run_scope(self.plan.call_id) as opened:
            if not await self._open_tools_and_provider():
                secret_access.release(opened)  # no run to name: audited as any use outside a run
                return
        # The call is connected: it is a run from here, and it hears the decisions on its gated calls.
        try:
            await database_sync_to_async(service.start_call_run)(self.plan, opened)
        except Exception:  # the database refused the run's row: no call without its record
            logger.exception("could not write the run of call %s", self.plan.call_id)
            secret_access.release(opened)
            await self._refuse("call_failed", "The call could not be started. Try again in a moment.")
            return
        if self.channel_layer is not None:
            await self.channel_layer.group_add(group_name(self.plan.call_id), self.channel_name)
        caps = self.plan.capabilities
        await self.send_json(frame(
            "call_started", run_id=str(self.plan.call_id), conversation_id=str(self.plan.conversation_id),
            created_conversation=self.plan.created_conversation, agent=self.plan.agent_name,
            live=list(caps.live), hand_off=list(caps.hand_off), never=list(caps.never),
            tools=[tool.name for tool in self.plan.session.tools]))
        self.pump = asyncio.create_task(self._pump())
        self.heart = asyncio.create_task(self._beat())

    async def _open_tools_and_provider(self) -> bool:
        """The call's tools (built and opened) and the provider's connection with them; False once refused."""
        assert self.plan is not None
        try:
            self.toolbox = await database_sync_to_async(service.toolbox)(self.plan)
            await self.toolbox.open()
        except DomainError as exc:
            await self._refuse(exc.code, exc.message)
            return False
        except Exception as exc:  # a tool server (MCP) that does not answer: the call says so, not its text
            logger.warning("call tools failed to open for agent %s: %s", self.plan.agent_id, type(exc).__name__)
            await self._refuse("tools_unavailable", "The agent's tools could not be reached. Try again in a moment.")
            return False
        self.plan.session = replace(self.plan.session,
                                    tools=self.plan.session.tools + self.toolbox.session_tools())
        try:
            key = await database_sync_to_async(service.provider_key)(self.plan)
            self.provider = await RealtimeConnection.open(base_url=self.plan.base_url, model=self.plan.model,
                                                          key=key, session=self.plan.session)
        except DomainError as exc:
            await self._refuse(exc.code, exc.message)
            return False
        except netguard.Refused as exc:
            await self._refuse("provider_refused", netguard.operator_text(exc))
            return False
        except Exception as exc:  # the provider refused the key or did not answer: its text is never relayed
            logger.warning("realtime connect failed for agent %s: %s", self.plan.agent_id, type(exc).__name__)
            await self._refuse("provider_unavailable", "The voice model did not answer. Try again in a moment.")
            return False
        return True

    def _resolve(self, user):
        session = self.scope.get("session")
        org_id = session.get(SESSION_KEY) if session is not None else None
        return resolve_actor(None, user=user, header_org=org_id,
                             session_key=session.session_key if session is not None else None)

    async def _refuse(self, code: str, message: str) -> None:
        await self.send_json(frame("error", code=code, message=message))
        await self.close(code=CLOSE_REFUSED)

    async def disconnect(self, code):
        for task in list(getattr(self, "tasks", {}).values()):
            task.cancel()
        for name in ("pump", "heart"):
            task = getattr(self, name, None)
            if task is not None and task is not asyncio.current_task():
                task.cancel()
        # Once, whoever comes first (the pump ending the call, the page closing), and shielded: the socket's own
        # disconnect cancels the pump, and the call's run must still end and the provider still be closed.
        if getattr(self, "finishing", None) is None:
            self.finishing = asyncio.ensure_future(self._finish())
        await asyncio.shield(self.finishing)

    async def _finish(self) -> None:
        if self.provider is not None:
            with contextlib.suppress(Exception):
                await self.provider.close()
        toolbox = getattr(self, "toolbox", None)
        if toolbox is not None:
            with contextlib.suppress(Exception):
                await toolbox.close()
        if self.plan is None:
            return
        if self.plan.run_started and self.channel_layer is not None:
            with contextlib.suppress(Exception):
                await self.channel_layer.group_discard(group_name(self.plan.call_id), self.channel_name)
        try:
            await database_sync_to_async(service.end_call)(self.plan, self.ending, self.ending_detail)
            if self.ending in service.QUIET_ENDINGS:  # a call that ended otherwise is kept to be read, empty or not
                await database_sync_to_async(service.drop_if_empty)(self.plan)
        except Exception:  # the database away: the stale sweep ends the run once its beat stops
            logger.exception("could not end the run of call %s", self.plan.call_id)

    async def _end(self, reason: str, message: str = "") -> None:
        self.ending, self.ending_detail = reason, message
        if message:
            await self.send_json(frame("error", code=reason, message=message))
        await self.send_json(frame("call_ended", reason=reason))
        await self.close()
        await self.disconnect(None)

    # ---- browser → provider

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None, **kwargs: Any) -> None:
        try:
            content = decode_frame(text_data, bytes_data)
        except FrameTooBig:
            await self.close(code=CLOSE_REFUSED)
            return
        except BadFrame as exc:
            await self.send_json(frame("error", message=exc.message, code="bad_frame"))
            return
        kind = content.get("type") if isinstance(content, dict) else None
        handler = {"audio": self._on_audio, "mute": self._on_mute, "answer": self._on_answer,
                   "decide": self._on_decide, "hang_up": self._on_hang_up}.get(str(kind))
        if handler is None or self.provider is None:
            await self.send_json(frame("error", message=f"Unknown frame type {kind!r}.", code="bad_frame"))
            return
        await handler(content)

    async def _on_audio(self, content: dict) -> None:
        audio = content.get("audio")
        if not isinstance(audio, str) or not audio or len(audio) > MAX_AUDIO_CHARS:
            await self.send_json(frame("error", message="Audio is base64 PCM16 in small chunks.", code="bad_frame"))
            return
        assert self.provider is not None
        await self.provider.append_audio(audio)

    async def _on_mute(self, content: dict) -> None:
        # Muting is the browser's (it stops sending); what was said but not yet committed is dropped here.
        assert self.provider is not None
        await self.provider.send({"type": "input_audio_buffer.clear"})

    async def _on_answer(self, content: dict) -> None:
        call_id = str(content.get("call_id") or "")
        if call_id not in self.pending_questions:
            await self.send_json(frame("error", message="That question is not open.", code="not_found"))
            return
        self.pending_questions.discard(call_id)
        answer = str(content.get("answer") or "")[:2000]
        try:
            answer = self._clean("in", answer)
        except GuardrailBlocked as exc:
            await self._end("guardrail_blocked", str(exc))
            return
        await self._output(call_id, json.dumps({"answer": answer}))

    async def _on_decide(self, content: dict) -> None:
        """The caller decides on the card. The tool runs (or not) when the decision comes back on the run's group
        (`run_frame`), as one made on the Approvals page does: one path, whoever decides."""
        assert self.plan is not None
        call_id = str(content.get("call_id") or "")
        if call_id not in self.pending_approvals:
            await self.send_json(frame("error", message="That call is not waiting for a decision.", code="not_found"))
            return
        try:
            await database_sync_to_async(service.decide)(self.plan, call_id=call_id,
                                                         approved=content.get("decision") == "approve")
        except DomainError as exc:
            await self.send_json(frame("error", message=exc.message, code=exc.code))

    async def run_frame(self, event: dict[str, Any]) -> None:
        """A frame on the call's run group: a decision on one of its gated calls, wherever it was made."""
        payload = event.get("frame") or {}
        data = payload.get("data") or {}
        if payload.get("type") != "approval_decided":
            return
        call_id = next((cid for cid, (_, _, approval_id) in self.pending_approvals.items()
                        if approval_id == str(data.get("approval_id"))), None)
        if call_id is None:
            return
        name, args, _ = self.pending_approvals.pop(call_id)
        if data.get("status") == "approved":
            self._background(call_id, self._run_tool(call_id, name, args, approved=True))
            return
        if data.get("status") == "rejected":
            assert self.plan is not None and self.provider is not None
            await database_sync_to_async(service.tool_finished)(
                self.plan, call_id=call_id, output=json.dumps({"error": "The person declined this call."}), ok=False)
            await self.send_json(frame("tool_done", call_id=call_id, name=name, status="rejected"))
            await self.provider.say(f"The person declined the call of {name}; it did not run. Say so briefly.")

    async def _on_hang_up(self, content: dict) -> None:
        await self._end("hung_up")

    async def _beat(self) -> None:
        """Keep the call's run alive while the call lasts; a stop asked for it (its page, the API) ends the call."""
        assert self.plan is not None
        while True:
            await asyncio.sleep(settings.RUN_HEARTBEAT_SECONDS)
            try:
                stop = await database_sync_to_async(service.beat)(self.plan)
            except Exception:  # the database away for a beat: the next one tries again (the sweep is the bound)
                logger.warning("could not beat the run of call %s", self.plan.call_id, exc_info=True)
                continue
            if stop:
                await self._end("stopped")
                return

    # ---- provider → browser

    async def _pump(self) -> None:
        assert self.provider is not None
        try:
            async for event in self.provider.events():
                await self._on_event(event)
        except (GuardrailBlocked, BudgetExceeded) as exc:
            await self._end("guardrail_blocked" if isinstance(exc, GuardrailBlocked) else "budget_exceeded",
                            str(exc))
            return
        except RealtimeError as exc:
            await self._end("provider_error", str(exc))
            return
        await self._end("provider_closed")

    def _clean(self, edge: str, text: str) -> str:
        assert self.plan is not None
        screen = self.plan.screen(edge)
        return screen.clean(text) if screen is not None else text

    async def _on_event(self, event: dict[str, Any]) -> None:
        assert self.plan is not None
        kind = event["type"]
        if kind == "response.audio.delta":
            await self.send_json(frame("audio", audio=str(event.get("delta") or "")))
        elif kind == "response.audio_transcript.delta":
            await self.send_json(frame("caption", role="assistant", delta=str(event.get("delta") or "")))
        elif kind == "response.audio_transcript.done":
            await self._turn(Message.Role.ASSISTANT, "out", str(event.get("transcript") or ""))
        elif kind == "conversation.item.input_audio_transcription.completed":
            await self._turn(Message.Role.USER, "in", str(event.get("transcript") or ""))
        elif kind == "input_audio_buffer.speech_started":
            await self.send_json(frame("speech_started"))
        elif kind == "response.function_call_arguments.done":
            await self._on_function_call(event)
        elif kind == "response.done":
            response = event.get("response")
            response = response if isinstance(response, dict) else {}
            cost = await database_sync_to_async(service.record_usage)(self.plan, response.get("usage"))
            await self.send_json(frame("usage", cost_usd=str(cost)))
        elif kind == "error":
            raise RealtimeError(error_code(event))

    async def _turn(self, role: str, edge: str, text: str) -> None:
        assert self.plan is not None
        cleaned = self._clean(edge, text)
        message_id = await database_sync_to_async(service.record_turn)(self.plan, role=role, text=cleaned)
        if message_id is not None:
            await self.send_json(frame("turn", role=role, text=cleaned, message_id=message_id))

    async def _on_function_call(self, event: dict[str, Any]) -> None:
        assert self.plan is not None and self.provider is not None
        call_id, name = str(event.get("call_id") or ""), str(event.get("name") or "")
        try:
            args = json.loads(event.get("arguments") or "{}")
        except ValueError:
            args = {}
        args = args if isinstance(args, dict) else {}
        await self.send_json(frame("tool", name=name, call_id=call_id))
        capability_id = (self.toolbox.capability_of.get(name, "") if self.toolbox is not None else "") or \
            service.CAPABILITY_OF.get(name, "")
        await database_sync_to_async(service.tool_started)(self.plan, call_id=call_id, name=name,
                                                           capability_id=capability_id, args=args)
        if name == service.PASS_WORK and self.plan.capabilities.hand_off:
            await self._hand_off(call_id, str(args.get("task") or ""))
        elif name == service.ASK_USER and service.ASK_USER in [t.name for t in self.plan.session.tools]:
            self.pending_questions.add(call_id)
            options = [str(o)[:200] for o in (args.get("options") or []) if isinstance(o, str)][:6]
            await self.send_json(frame("ask_user", call_id=call_id, question=str(args.get("question") or "")[:1000],
                                       options=options))
        elif self.toolbox is not None and self.toolbox.has(name):
            self._background(call_id, self._run_tool(call_id, name, args))
        else:
            await self._output(call_id, json.dumps({"error": f"There is no tool {name!r}."}), ok=False)

    async def _output(self, call_id: str, output: str, *, ok: bool = True, respond: bool = True) -> None:
        """A function's output to the model, written on its `ToolCall` row first (what the model read)."""
        assert self.plan is not None and self.provider is not None
        await database_sync_to_async(service.tool_finished)(self.plan, call_id=call_id, output=output, ok=ok)
        await self.provider.function_output(call_id, output, respond=respond)

    def _background(self, key: str, work: Any) -> None:
        task = asyncio.create_task(work)
        self.tasks[key] = task
        task.add_done_callback(lambda _: self.tasks.pop(key, None))

    async def _run_tool(self, call_id: str, name: str, args: dict[str, Any], *, approved: bool = False) -> None:
        """One live tool call through the gate; its result checked by the guardrails before the model reads it."""
        assert self.plan is not None and self.toolbox is not None and self.provider is not None
        with secret_access.run_scope(self.plan.call_id) as opened:  # what the tool opens, audited with its row
            outcome = await self.toolbox.call(name, args, call_id=call_id, approved=approved)
        if outcome.status == "approval":
            await self._ask_approval(call_id, name, args)
            return
        output = outcome.output
        try:
            output = self._clean("tool", output)
        except GuardrailBlocked:
            output, outcome = json.dumps({"error": "The guardrails withheld this result."}), tools.Outcome("blocked")
        await self.send_json(frame("tool_done", call_id=call_id, name=name, status=outcome.status))
        await database_sync_to_async(service.tool_finished)(self.plan, call_id=call_id, output=output,
                                                            ok=outcome.status == "done", opened=opened)
        if approved:  # the model was answered when the card went up: the result comes as a message
            await self.provider.say(f"The person approved {name}; it ran. Its result: {output}")
        else:
            await self.provider.function_output(call_id, output)

    async def _ask_approval(self, call_id: str, name: str, args: dict[str, Any]) -> None:
        assert self.plan is not None and self.provider is not None and self.toolbox is not None
        approval_id = await database_sync_to_async(service.tool_parked)(
            self.plan, call_id=call_id, name=name, capability_id=self.toolbox.capability_of.get(name, ""), args=args)
        self.pending_approvals[call_id] = (name, args, approval_id)
        can_decide = await database_sync_to_async(service.may_decide)(self.plan)
        shown = json.dumps(args, ensure_ascii=False, default=str)[:2000]
        await self.send_json(frame("approval", call_id=call_id, name=name, args=shown, can_decide=can_decide,
                                   approval_id=approval_id))
        if can_decide:
            note = ("This call waits for the person's approval on a card in the call view. Tell them briefly what "
                    "you want to do and that it needs their approval; its outcome comes back to you as a message.")
            await self.provider.function_output(call_id, json.dumps({"status": "waiting_for_approval", "note": note}))
        else:
            note = ("This tool needs an approver's decision, and the person in this call cannot approve it: it has "
                    "not run, and runs only if an approver allows it on the Approvals page while the call lasts "
                    "(the outcome then comes back to you as a message). Tell them so.")
            await self.provider.function_output(call_id, json.dumps({"error": note}))

    async def _hand_off(self, call_id: str, task: str) -> None:
        assert self.plan is not None and self.provider is not None
        run_id = uuid.uuid4()
        layer = get_channel_layer()
        channel = await layer.new_channel()
        # Joined before the run can start, so its last frame is never missed.
        await layer.group_add(group_name(run_id), channel)
        try:
            await database_sync_to_async(service.hand_off)(self.plan, task=task, run_id=run_id)
        except DomainError as exc:
            await layer.group_discard(group_name(run_id), channel)
            await self._output(call_id, json.dumps({"error": exc.message}), ok=False)
            return
        await self.send_json(frame("task_started", run_id=str(run_id), task=task[:service.MAX_TASK_CHARS]))
        await self._output(call_id, json.dumps(
            {"status": "started", "run_id": str(run_id),
             "note": "Working on it in the background; keep talking, the result will come."}))
        self.tasks[str(run_id)] = asyncio.create_task(self._follow(run_id, channel, task))

    async def _follow(self, run_id: uuid.UUID, channel: str, task: str) -> None:
        """Wait for the hand-off's run to end, then have the call tell its result (checked as a tool result)."""
        layer = get_channel_layer()
        output, status = "", "failed"
        try:
            while True:
                message = await layer.receive(channel)
                done = False
                for payload in frames_in(message):
                    data = payload.get("data") or {}
                    if payload.get("type") == "final_result":
                        output = str(data.get("output") or "")
                    if payload.get("type") in FINAL_FRAME_TYPES:
                        status = str(data.get("status") or ("failed" if payload.get("type") == "error" else "done"))
                        done = True
                if done:
                    break
        finally:
            await layer.group_discard(group_name(run_id), channel)
            self.tasks.pop(str(run_id), None)
        try:
            output = self._clean("tool", output)
        except GuardrailBlocked:
            output, status = "", "guardrail_blocked"
        await self.send_json(frame("task_done", run_id=str(run_id), status=status, output=output))
        if self.provider is not None:
            told = (f"The background task \"{task[:300]}\" finished. Its result: {output}" if output
                    else f"The background task \"{task[:300]}\" ended without a result ({status}).")
            await self.provider.say(told)

"""`POST /v1/chat/completions` and `GET /v1/models`: OpenAI's Chat Completions over the platform's agents.

`model` is an agent's slug (or id), optionally `slug@environment`; the run is an ordinary `api` run
(budgets, approvals, guardrails, the ledger). Async views: a streamed answer holds no thread while it waits."""

from __future__ import annotations

import json
import logging
import time
import uuid
from collections.abc import AsyncIterator
from typing import Any

from asgiref.sync import sync_to_async
from django.http import HttpRequest, HttpResponseBase, JsonResponse, StreamingHttpResponse
from django.views.decorators.csrf import csrf_exempt

from agenticos.errors import DomainError
from agents.models import Run, RunStatus
from agents.runner.frames import ENDED_MESSAGES, FINAL_FRAME_TYPES
from interop import service
from interop.errors import ApiError, error_response, from_domain
from interop.frames import RunFrames

logger = logging.getLogger(__name__)
CONVERSATION_HEADER = "HTTP_X_AGENTICOS_CONVERSATION_ID"
PARKED = {RunStatus.AWAITING_APPROVAL, RunStatus.AWAITING_ANSWER}
# Frames that show the model was reached: a stream's headers wait for one, so a run refused before it
# (a spent budget) is answered with a real status rather than an error inside a 200 stream.
ANSWERING = {"part_start", "text_delta", "tool_call", "call_tools_start", "final_result_start", "final_result"}
CLIENT_TOOL_FIELDS = ("tools", "functions", "tool_choice", "function_call")


def parked_text(run_id: Any, status: str) -> str:
    waiting = "an approval of one of its actions" if status == RunStatus.AWAITING_APPROVAL else "a person's answer"
    return (f"This run is waiting for {waiting} before it can continue (run {run_id}). It resumes once that is "
            f"given in AgenticOS; its answer will be in the run's record.")


def ended_error(status: str) -> ApiError:
    message, code = ENDED_MESSAGES.get(status, ENDED_MESSAGES["failed"])
    if status == RunStatus.BUDGET_EXCEEDED:  # README: 402 Payment Required for a spent budget
        return ApiError(402, message, type_="insufficient_quota", code=code)
    if status == RunStatus.GUARDRAIL_BLOCKED:
        return ApiError(400, message, type_="invalid_request_error", code="content_filter")
    return ApiError(500, message, type_="server_error", code=code)


def usage_of(input_tokens: int, output_tokens: int) -> dict[str, int]:
    return {"prompt_tokens": input_tokens, "completion_tokens": output_tokens,
            "total_tokens": input_tokens + output_tokens}


@csrf_exempt
async def list_models(request: HttpRequest) -> HttpResponseBase:
    if request.method != "GET":
        return error_response(ApiError(405, "Use GET.", code="method_not_allowed"))
    try:
        actor = await sync_to_async(service.actor_for)(request)
        agents = await sync_to_async(service.runnable_agents)(actor)
    except (ApiError, DomainError) as exc:
        return error_response(from_domain(exc))
    data = []
    for agent, environments in agents:
        for environment in environments:
            name = agent.slug if environment == service.DEFAULT_ENVIRONMENT else f"{agent.slug}@{environment}"
            data.append({"id": name, "object": "model", "created": int(agent.created_at.timestamp()),
                         "owned_by": actor.organization.slug, "name": agent.name})
    return JsonResponse({"object": "list", "data": data})


@csrf_exempt
async def chat_completions(request: HttpRequest) -> HttpResponseBase:
    if request.method != "POST":
        return error_response(ApiError(405, "Use POST.", code="method_not_allowed"))
    frames: RunFrames | None = None
    try:
        actor = await sync_to_async(service.actor_for)(request)
        body = _body(request)
        conversation_id = request.META.get(CONVERSATION_HEADER) or (body.get("metadata") or {}).get("conversation_id")
        turn = service.turn_from_messages(body.get("messages"), continuing=bool(conversation_id))
        run_id = uuid.uuid4()
        frames = RunFrames(run_id)
        run = await frames.start(lambda: service.start(actor=actor, model=body["model"], turn=turn,
                                                       conversation_id=conversation_id, run_id=run_id))
        reply = Reply(run, body["model"], frames)
        if body.get("stream"):
            return await reply.streaming(include_usage=bool((body.get("stream_options") or {}).get("include_usage")))
        return await reply.complete()
    except (ApiError, DomainError) as exc:
        if frames is not None:
            await frames.close()
        return error_response(from_domain(exc))
    except Exception:
        # An OpenAI client expects its error object even here; the trace stays in the log, never the response.
        logger.exception("chat completion failed")
        if frames is not None:
            await frames.close()
        return error_response(ApiError(500, "Something went wrong.", type_="server_error", code="internal_error"))


def _body(request: HttpRequest) -> dict[str, Any]:
    try:
        body = json.loads(request.body or b"{}")
    except ValueError:
        raise ApiError(400, "The body must be JSON.", code="invalid_json") from None
    if not isinstance(body, dict):
        raise ApiError(400, "The body must be a JSON object.", code="invalid_json")
    if not isinstance(body.get("model"), str) or not body["model"]:
        raise ApiError(400, "`model` is required: an agent's slug, optionally `slug@environment`.", code="invalid_model")
    for field in CLIENT_TOOL_FIELDS:
        if body.get(field):
            raise ApiError(400, f"`{field}` is not supported: the platform's tools run server-side, as the agent "
                                "is configured. Send messages only.", code="tools_not_supported")
    if body.get("n") not in (None, 1):
        raise ApiError(400, "Only n=1 is supported.", code="invalid_n")
    if metadata := body.get("metadata"):
        if not isinstance(metadata, dict):
            raise ApiError(400, "`metadata` must be an object.", code="invalid_metadata")
    return body


class Reply:
    """One run's answer in OpenAI's shapes."""

    def __init__(self, run: Run, model: str, frames: RunFrames) -> None:
        self.run, self.model, self.frames = run, model, frames
        self.id = f"chatcmpl-{run.pk.hex}"
        self.created = int(time.time())

    def headers(self, response: HttpResponseBase) -> HttpResponseBase:
        response["X-AgenticOS-Run-Id"] = str(self.run.pk)
        if self.run.conversation_id:
            response["X-AgenticOS-Conversation-Id"] = str(self.run.conversation_id)
        return response

    async def ended(self) -> Run:
        return await Run.objects.aget(pk=self.run.pk)

    async def complete(self) -> HttpResponseBase:
        try:
            async for _ in self.frames.iterate():
                pass
        finally:
            await self.frames.close()
        run = await self.ended()
        if run.status in PARKED:
            content = parked_text(run.pk, run.status)
        elif run.status == RunStatus.COMPLETED:
            content = run.output
        elif run.is_terminal:
            return self.headers(error_response(ended_error(run.status)))
        else:
            return self.headers(error_response(ApiError(504, f"The run {run.pk} is still going; its answer will be "
                                                             "in its record.", type_="server_error", code="timeout")))
        return self.headers(JsonResponse({
            "id": self.id, "object": "chat.completion", "created": self.created, "model": self.model,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content, "refusal": None},
                         "logprobs": None, "finish_reason": "stop"}],
            "usage": usage_of(run.input_tokens, run.output_tokens),
            "system_fingerprint": None,
        }))

    async def streaming(self, *, include_usage: bool) -> HttpResponseBase:
        iterator = self.frames.iterate()
        first: list[dict[str, Any]] = []
        try:
            async for item in iterator:
                first.append(item)
                if item.get("type") in ANSWERING or item.get("type") in FINAL_FRAME_TYPES:
                    break
        except BaseException:
            await self.frames.close()
            raise
        if first and first[-1].get("type") == "error":
            await self.frames.close()
            return self.headers(error_response(ended_error(first[-1].get("data", {}).get("status", "failed"))))
        response = StreamingHttpResponse(self.events(first, iterator, include_usage), content_type="text/event-stream")
        response["Cache-Control"] = "no-cache"
        response["X-Accel-Buffering"] = "no"
        return self.headers(response)

    def chunk(self, delta: dict[str, Any], finish_reason: str | None = None, usage: Any = None,
              choices: bool = True) -> str:
        body: dict[str, Any] = {"id": self.id, "object": "chat.completion.chunk", "created": self.created,
                                "model": self.model, "system_fingerprint": None,
                                "choices": [{"index": 0, "delta": delta, "logprobs": None,
                                             "finish_reason": finish_reason}] if choices else []}
        if usage is not None or not choices:
            body["usage"] = usage
        return f"data: {json.dumps(body)}\n\n"

    async def events(self, first: list[dict[str, Any]], rest: AsyncIterator[dict[str, Any]],
                     include_usage: bool) -> AsyncIterator[str]:
        streamed = ""
        ended: dict[str, Any] | None = None
        try:
            yield self.chunk({"role": "assistant", "content": ""})

            async def every() -> AsyncIterator[dict[str, Any]]:
                for item in first:
                    yield item
                if first and first[-1].get("type") in FINAL_FRAME_TYPES:
                    return
                async for item in rest:
                    yield item

            async for item in every():
                kind, data = item.get("type"), item.get("data") or {}
                if kind == "text_delta" and data.get("content"):
                    streamed += data["content"]
                    yield self.chunk({"content": data["content"]})
                elif kind == "final_result" and not streamed and data.get("output"):
                    streamed = data["output"]  # the deltas were lost: the answer as a whole
                    yield self.chunk({"content": streamed})
                elif kind in FINAL_FRAME_TYPES:
                    ended = item
        finally:
            await self.frames.close()
        if ended is None or ended.get("type") == "error":
            status = (ended or {}).get("data", {}).get("status", "failed")
            error = ended_error(status)
            yield f"data: {json.dumps({'error': {'message': error.message, 'type': error.type, 'code': error.code}})}\n\n"
            yield "data: [DONE]\n\n"
            return
        status = ended.get("data", {}).get("status")
        if status in PARKED:
            yield self.chunk({"content": ("\n\n" if streamed else "") + parked_text(self.run.pk, status)})
        yield self.chunk({}, finish_reason="stop")
        if include_usage:
            run = await self.ended()
            yield self.chunk({}, usage=usage_of(run.input_tokens, run.output_tokens), choices=False)
        yield "data: [DONE]\n\n"

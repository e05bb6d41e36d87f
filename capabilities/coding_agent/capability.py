"""Coding agent (`run_coding_agent`): hand a whole software task to Claude Code or Codex, the real CLIs, working
in this agent's own sandbox until done.

One call, in this order:
1. the budget caps (`governance.metered.check`): used up → a result, nothing started;
2. the run's sandbox workspace (the `sandbox` capability on a `service` connection with its shell; by
   delegation, the parent's when it shares `sandbox`) is brought up to date with the stored files;
3. the harness starts in the background there (a sandboxd task, sandboxd/tasks.py) with the key in its
   environment and egress to its model API only; its event stream is read every 1.5 s and each step goes to
   the chat as a delegation-style panel (`subagent_*` frames and a `delegation` part in the transcript);
4. at the end — done, failed, past `timeout_minutes`, or stopped (the run cancelled: the task's whole process
   group is killed) — the tokens go to the ledger (label `coding_agent`; Codex without `model` names no model,
   so its spend is unpriced and the run's cost partial), the session id is kept for the conversation, the
   files it changed come back to the stored workspace, and the result holds the answer, the steps and the files.

Codex with a ChatGPT sign-in (a `codex_chatgpt` secret: the `auth.json` of `codex login`) instead of a key: the
file goes to the task's private home outside /workspace (sandboxd's `home_files`), so neither the agent's file
tools nor anything run in the workspace before or after can read it, and sandboxd removes it when the task ends
— done, failed, timed out or stopped. When Codex refreshed its tokens meanwhile (the file changed: the old refresh
token may be revoked now), the new file is sealed again over the same secret (`secret.refreshed` in the audit
log), so the next task signs in with it. Because everything Codex runs can read that file, a sign-in is one
person's: it is used only for a person who may see it in the vault (never an API-key, visitor or system run), and
only in a sandbox no other person's task shares (session_scope run, conversation or user).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from pydantic_ai import RunContext

from capabilities import failures
from capabilities.base import BuildContext, Built, Capability, KeyRequirement, NotBuilt, ToolDecl, enum_labels
from capabilities.coding_agent import harness as h
from capabilities.lifecycle import RunHooks

logger = logging.getLogger(__name__)

LEDGER_KIND = "coding_agent"
POLL_SECONDS = 1.5
MAX_TASK = 20_000
PROVIDERS = {"claude_code": "anthropic", "codex": "openai"}
SIGN_IN = "codex_chatgpt"  # agenticos.models.SecretKind.CODEX_CHATGPT
# A sign-in's sandbox may not be shared with another person's tasks (capabilities/sandbox session_scope).
SIGN_IN_SCOPES = ("run", "conversation", "user")


class CodingAgentConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    harness: Literal["claude_code", "codex"] = Field(
        default="claude_code", description="Which coding CLI does the work.",
        json_schema_extra=enum_labels({"claude_code": "Claude Code (an Anthropic key or a Claude subscription "
                                                      "token)", "codex": "Codex (an OpenAI key or a ChatGPT "
                                                                                 "sign-in)"}))
    access: Literal["edit", "read_only"] = Field(
        default="edit", description="Read only answers from the code without changing it (Claude Code only).",
        json_schema_extra=enum_labels({"edit": "Edit files and run commands", "read_only": "Read only"}))
    model: str | None = Field(default=None, max_length=100, description="Empty: the harness's own default.")
    base_url: str | None = Field(default=None, max_length=500,
                                 description="Claude Code only: a gateway speaking the Anthropic API.")
    timeout_minutes: int = Field(default=15, ge=1, le=60, description="Per task, 1-60.")

    @field_validator("base_url")
    @classmethod
    def _http_url(cls, value: str | None) -> str | None:
        if value is None or not value.strip():
            return None
        from urllib.parse import urlsplit

        parts = urlsplit(value.strip())
        if parts.scheme not in ("http", "https") or not parts.hostname or parts.username or parts.password:
            raise ValueError("base_url must be an http(s) address without a user or password in it")
        return value.strip()

    @model_validator(mode="after")
    def _per_harness(self) -> CodingAgentConfig:
        if self.harness == "codex":
            if self.access == "read_only":
                raise ValueError("Codex has no read_only access here: its read-only mode is a sandbox of its own "
                                 "that cannot start inside the agent's container. Use Claude Code, or edit.")
            self.base_url = None  # the catalog: dropped when Codex is chosen
        return self


def key_provider(key: str) -> str:
    """Whose key this is, by its documented prefix: 'anthropic', 'openai' or '' (not recognisable)."""
    if key.startswith("sk-ant-"):
        return "anthropic"
    if key.startswith("sk-"):
        return "openai"
    return ""


def key_problem(config: CodingAgentConfig, key: str, kind: str) -> str | None:
    """Why this key cannot drive this harness, or None. A custom secret fits both; with base_url the key is the
    gateway's, so Claude Code takes any."""
    if kind == SIGN_IN:
        return None if config.harness == "codex" else (
            "A ChatGPT sign-in drives Codex only: Claude Code takes an Anthropic API key or a Claude subscription "
            "token.")
    if kind == "custom" or (config.harness == "claude_code" and config.base_url):
        return None
    provider = key_provider(key)
    wanted = PROVIDERS[config.harness]
    if provider and provider != wanted:
        accepted = "an Anthropic API key or a Claude subscription token" if wanted == "anthropic" else \
            "an OpenAI API key or a ChatGPT sign-in"
        return (f"This key is {provider.title() if provider != 'openai' else 'OpenAI'}'s: "
                f"{h.LABELS[config.harness]} takes {accepted}.")
    return None


# ------------------------------------------------------------------ what a run has


@dataclass
class _State:
    config: CodingAgentConfig
    reveal: Any
    connection_id: str | None
    runtime: str | None
    sending: set[asyncio.Task[Any]] = field(default_factory=set)
    # A ChatGPT sign-in: which secret to open afresh for each task (a task before may have refreshed it) and seal
    # again after; None for a key.
    sign_in_id: str | None = None


def _sandbox_binding(spec: Any) -> Any:
    if spec is None:
        return None
    return next((b for b in spec.enabled_bindings() if b.id == "sandbox"), None)


def build(ctx: BuildContext) -> list[Built]:
    from pydantic_ai.toolsets import FunctionToolset

    from capabilities.sandbox.capability import SandboxConfig

    assert isinstance(ctx.config, CodingAgentConfig)
    binding = _sandbox_binding(ctx.spec)
    if binding is None:
        raise NotBuilt("it works in the agent's sandbox, and this run has none (bind sandbox on a sandbox "
                       "connection, or share the delegating agent's)")
    sandbox = SandboxConfig.model_validate(binding.config or {})
    if sandbox.backend != "service" or not sandbox.include_execute:
        raise NotBuilt("its sandbox keeps stored files without a shell, so the harness has nowhere to run")
    assert ctx.secret_value is not None  # the registry skips a binding without its key
    sign_in_id = None
    if _secret_kind(ctx) == SIGN_IN:
        refused = _sign_in_refusal(ctx, sandbox)
        if refused:
            raise NotBuilt(refused)
        sign_in_id = str(ctx.binding.secret_id)
    ctx.deps.scratch["coding_agent"] = _State(config=ctx.config, reveal=ctx.secret_value,
                                              connection_id=sandbox.connection_id, runtime=sandbox.runtime,
                                              sign_in_id=sign_in_id)
    return [FunctionToolset([run_coding_agent], max_retries=1)]


def _secret_kind(ctx: BuildContext) -> str:
    from agenticos.models import Secret

    return Secret.objects.filter(pk=str(ctx.binding.secret_id), organization_id=ctx.organization_id).values_list(
        "kind", flat=True).first() or ""


def _sign_in_refusal(ctx: BuildContext, sandbox: Any) -> str | None:
    """Why this run may not use the bound ChatGPT sign-in, or None. Everything Codex runs can read the file, so
    it goes only to a person who may see the secret in the vault (running the agent is never a way into someone
    else's subscription), and only into a sandbox no other person's task shares (their task would run as the same
    user and could read it)."""
    from agenticos.models import Membership
    from agenticos.permissions import permissions_of
    from agents.models import Run
    from capabilities.sandbox.capability import _scope

    assert isinstance(ctx.config, CodingAgentConfig)
    if ctx.config.harness != "codex":
        return "its bound secret is a ChatGPT sign-in, which drives Codex only"
    run = Run.objects.filter(pk=ctx.deps.run_id, organization_id=ctx.organization_id).first()
    membership = Membership.objects.filter(user_id=ctx.deps.user_id, organization_id=ctx.organization_id).first() \
        if ctx.deps.user_id else None
    if run is None or membership is None or run.api_key_id is not None or \
            "secrets:view" not in permissions_of(membership.role, ctx.organization_id):
        return ("its ChatGPT sign-in is a person's subscription, used only in a run of someone who may see it in "
                "the vault (not an API-key, visitor or scheduled run)")
    if _scope(run, sandbox) not in SIGN_IN_SCOPES:
        return ("its ChatGPT sign-in would sit in a sandbox other people's tasks share; set the sandbox's "
                "session_scope to run, conversation or user")
    return None


def _open_sign_in(organization_id: str, secret_id: str) -> str:
    """The sign-in as sealed now (not the run's cached value: an earlier task of this run may have resealed it).
    Sync ORM; a use audited like every reveal."""
    from agenticos import vault
    from agenticos.models import Secret

    return vault.reveal(Secret.objects.get(pk=secret_id, organization_id=organization_id))


def _reseal(organization_id: str, secret_id: str | None, status: dict[str, Any], user_id: Any, run_id: Any) -> bool:
    """Seal what Codex rewrote (refreshed tokens) over the same secret. Sync ORM."""
    from agenticos.services import reseal_refreshed_secret

    value = (status.get("home_changed") or {}).get(h.CODEX_LOGIN_FILE)
    if not secret_id or not isinstance(value, str):
        return False
    resealed = reseal_refreshed_secret(organization_id=organization_id, secret_id=secret_id, value=value,
                                       user_id=user_id, run_id=run_id)
    if resealed:
        logger.info("coding agent: the ChatGPT sign-in %s was refreshed by Codex and sealed again", secret_id)
    return resealed


def _backend(run_id: str, organization_id: str, workspace_id: str, state: _State) -> Any:
    """The run's service workspace on its sandbox connection (sync ORM: the connection's token)."""
    from agenticos.models import Organization
    from workspaces import connections
    from workspaces.service import ServiceWorkspaceBackend

    organization = Organization.objects.get(pk=organization_id)
    connection = connections.for_run(organization, state.connection_id)
    client = connections.client_for(connection)
    return ServiceWorkspaceBackend(workspace_id, run_id=run_id, client=client, runtime=state.runtime or "workbench")


# ------------------------------------------------------------------ a task a lost worker left running

# While a task runs, which sandboxd task a call started is kept in Redis (run → {tool call id: where}), past the
# task's own timeout. A worker killed mid-task leaves its entry; the run's resumption on another worker
# (agents.runner.checkpoint.resume_results → the on_interrupted hook) stops that task, which would otherwise go
# on working and spending the tenant's key unseen, and hold the workspace (one task at a time) until its timeout.
# Redis rather than the call's row: the row's result is the call's answer, and this is only where it is running.
TASK_ENTRY_GRACE_SECONDS = 300


def _tasks_key(run_id: str) -> str:
    from agenticos import ratelimit

    return ratelimit.redis_name("coding-agent", "tasks", run_id)


def _remember(running: tuple[str, str], connection_id: str | None, remote_id: str, task_id: str,
              timeout_seconds: float, sign_in_id: str | None = None) -> None:
    import json

    from agenticos import ratelimit

    run_id, tool_call_id = running
    key = _tasks_key(run_id)
    # The sign-in's id (never its value): the resumed run seals what the stopped task refreshed.
    entry = json.dumps({"connection_id": connection_id, "workspace": remote_id, "task": task_id,
                        "sign_in": sign_in_id})
    with ratelimit.client().pipeline() as pipe:
        pipe.hset(key, tool_call_id, entry)
        pipe.expire(key, int(timeout_seconds) + TASK_ENTRY_GRACE_SECONDS)
        pipe.execute()


def _forget(running: tuple[str, str]) -> None:
    from agenticos import ratelimit

    ratelimit.client().hdel(_tasks_key(running[0]), running[1])


def _stop_interrupted(run: Any, calls: list[Any]) -> None:
    """The on_interrupted hook: stop the sandboxd task each interrupted `run_coding_agent` call left running.
    Sync (the resuming run's DB thread, which has no event loop of its own)."""
    import json

    from agenticos import ratelimit
    from workspaces import connections

    ours = [c.tool_call_id for c in calls if c.tool_name == "run_coding_agent"]
    if not ours:
        return
    key = _tasks_key(str(run.pk))
    for tool_call_id, raw in zip(ours, ratelimit.client().hmget(key, ours), strict=True):
        if raw is None:
            continue  # it ended (or never started) before the worker died
        where = json.loads(raw)
        connection = connections.for_run(run.organization, where.get("connection_id"))
        client = connections.client_for(connection)
        stopped = asyncio.run(client.stop_task(where["workspace"], where["task"]))
        _reseal(str(run.organization_id), where.get("sign_in"), stopped, run.user_id, run.pk)
        ratelimit.client().hdel(key, tool_call_id)
        logger.info("coding agent task %s stopped: its run %s resumed after a lost worker", where["task"], run.pk)


# ------------------------------------------------------------------ the panel


@dataclass
class Panel:
    """The task's steps in the chat, drawn like a delegation (`subagent_*` frames), and the same panel in the
    transcript (a `delegation` part), so a reopened turn draws what the live one drew. Web chat only."""

    execution: Any
    task_id: str
    part: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def open(cls, ctx: RunContext[Any], config: CodingAgentConfig, task: str) -> Panel:
        execution = ctx.deps.execution
        if execution is None or getattr(execution.run, "surface", "") != "web":
            execution = None
        panel = cls(execution=execution, task_id=f"coding-{uuid.uuid4().hex[:12]}")
        panel.part = {"type": "delegation", "task_id": panel.task_id, "parent_task_id": None, "depth": 1,
                      "name": h.LABELS[config.harness], "kind": "coding_agent", "agent_id": None,
                      "tool_call_id": ctx.tool_call_id, "mode": "sync", "task": task[:500], "status": "running",
                      "parts": [], "usage": None}
        if execution is not None:
            transcript = getattr(execution, "transcript", None)
            if transcript is not None:
                transcript.parts.append(panel.part)
        return panel

    async def started(self) -> None:
        await self._emit("subagent_started", **{k: v for k, v in self.part.items() if k not in ("parts", "type")})

    async def show(self, changes: list[tuple[Any, ...]]) -> None:
        for change in changes:
            if change[0] == "text":
                self.part["parts"].append({"type": "text", "text": change[1]})
                await self._emit("subagent_delta", task_id=self.task_id, depth=1, part_type="text",
                                 content=change[1], new_part=True)
            elif change[0] == "tool":
                _, call_id, name, args = change
                self.part["parts"].append({"type": "tool", "tool_call_id": call_id, "tool_name": name,
                                           "args": args, "status": "running", "result": None})
                await self._emit("subagent_tool_call", task_id=self.task_id, depth=1, tool_call_id=call_id,
                                 tool_name=name, args=args)
            else:
                _, call_id, ok, content = change
                for step in self.part["parts"]:
                    if step["type"] == "tool" and step["tool_call_id"] == call_id:
                        step["status"], step["result"] = ("ok" if ok else "error"), content
                await self._emit("subagent_tool_result", task_id=self.task_id, depth=1, tool_call_id=call_id,
                                 ok=ok, content=content)

    async def close(self, status: str, usage: dict[str, Any] | None) -> None:
        self.part["status"], self.part["usage"] = status, usage
        for step in self.part["parts"]:
            if step["type"] == "tool" and step["status"] == "running":
                step["status"] = "unfinished"
        await self._emit("subagent_finished", task_id=self.task_id, depth=1, status=status, usage=usage)

    async def _emit(self, frame_type: str, /, **data: Any) -> None:
        if self.execution is None:
            return
        from agents.run_handle import frame

        await self.execution.emit(frame(frame_type, **data))


# ------------------------------------------------------------------ spend


def _priced(harness: str, used: h.Usage) -> tuple[Decimal, bool]:
    from pydantic_ai.messages import ModelResponse
    from pydantic_ai.usage import RequestUsage

    if not used.model:
        return Decimal("0"), True
    response = ModelResponse(parts=[], model_name=used.model, provider_name=PROVIDERS[harness],
                             usage=RequestUsage(input_tokens=used.input_tokens, output_tokens=used.output_tokens,
                                                cache_read_tokens=used.cache_read_tokens))
    try:
        return Decimal(str(response.cost().total_price)), False
    except Exception:  # noqa: BLE001 — genai-prices does not know this model: recorded unpriced, run partial
        return Decimal("0"), True


def _record(meter: Any, harness: str, config: CodingAgentConfig, usage: list[h.Usage]) -> dict[str, Any]:
    """Every model the task used, one ledger row each; a task that ended before its harness said what it spent
    is recorded too (zero, partial). Sync (ORM)."""
    from governance import metered

    rows = usage or [h.Usage(model="")]
    tokens_in = tokens_out = 0
    total, any_partial = Decimal("0"), False
    for used in rows:
        if harness == "codex" and not used.model:
            used.model = config.model or ""
        cost, partial = _priced(harness, used) if usage else (Decimal("0"), True)
        metered.record(meter, model=f"{harness}:{used.model or 'unknown'}", cost=cost, partial=partial,
                       input_tokens=used.input_tokens, output_tokens=used.output_tokens)
        tokens_in, tokens_out = tokens_in + used.input_tokens, tokens_out + used.output_tokens
        total, any_partial = total + cost, any_partial or partial
    return {"input_tokens": tokens_in, "output_tokens": tokens_out, "requests": len(usage), "cost_usd": f"{total:f}",
            "cost_is_partial": any_partial}


# ------------------------------------------------------------------ the tool


def _operator_url(provider: str) -> str | None:
    """The operator's address for a provider's API (CODING_AGENT_ANTHROPIC_BASE_URL, CODING_AGENT_OPENAI_BASE_URL:
    a proxy of their own, or the tests' fakes); unset, the provider's own. sandboxd's egress allow-list must
    name it too."""
    from django.conf import settings

    return getattr(settings, f"CODING_AGENT_{provider}_BASE_URL", "") or None


def _operator_token_url() -> str | None:
    """CODING_AGENT_CHATGPT_TOKEN_URL: where Codex signed in with ChatGPT refreshes (empty: auth.openai.com)."""
    from django.conf import settings

    return getattr(settings, "CODING_AGENT_CHATGPT_TOKEN_URL", "") or None


async def _session(backend: Any, folder: str, harness: str) -> tuple[str | None, tuple[int, int]]:
    """(the conversation's session id for this harness, the tokens Codex had counted in it): `harness:id[:in:out]`."""
    from workspaces.client import SandboxdError

    try:
        saved = (await backend.client.read(backend.remote_id, f"{folder}/session")).decode("utf-8", "replace")
    except SandboxdError:
        return None, (0, 0)
    name, session, *counted = saved.strip().split(":")
    if name != harness or not session:
        return None, (0, 0)
    try:
        baseline = (int(counted[0]), int(counted[1])) if len(counted) == 2 else (0, 0)
    except ValueError:
        baseline = (0, 0)
    return session, baseline


async def run_coding_agent(ctx: RunContext[Any], task: str, fresh_session: bool = False) -> str | dict[str, Any]:
    """Hand a software task to the coding agent, which works on it in the sandbox until done.

    Give it a whole task (what to build, fix or find, and where), not one step: it reads, edits and runs
    commands in your workspace on its own, and the person watches it work. Its later tasks in this chat
    remember what the earlier ones read.

    Args:
        task: The complete software task, written so it stands on its own (1-20000 characters).
        fresh_session: Start from a clean slate instead of continuing this chat's earlier coding session.

    Returns:
        `status` (completed, failed, timed_out or stopped), the coding agent's `answer`, its `steps` (what it
        said, read, edited and ran), the `changed_files` and `deleted_files` in the workspace, and the
        `usage`; or a sentence saying why nothing was started.
    """
    from agents.run_handle import on_db_thread
    from governance import budgets, metered
    from workspaces.client import SandboxdError
    from workspaces.connections import ConnectionUnavailable

    deps = ctx.deps
    state: _State = deps.scratch["coding_agent"]
    config = state.config
    text = task.strip()
    if not text or len(text) > MAX_TASK:
        return failures.retry(ctx, f"task must describe the work in 1-{MAX_TASK} characters.")
    meter = await on_db_thread(metered.for_run, deps.run_id, deps.organization_id, kind=LEDGER_KIND)
    try:
        await on_db_thread(metered.check, meter)
    except budgets.BudgetExceeded as exc:
        cap = exc.cap
        return failures.refuse(f"The {cap.label} of ${cap.limit:.2f} is used up (${cap.spent:.2f} spent this "
                               "month): the coding agent was not started and nothing was spent.")
    workspace_id = deps.scratch.get("workspace_id")
    if not workspace_id:
        return failures.refuse("This run has no sandbox workspace, so the coding agent has nowhere to work.")
    try:
        backend = await on_db_thread(_backend, str(deps.run_id), str(deps.organization_id), str(workspace_id),
                                     state)
    except ConnectionUnavailable as exc:
        return failures.refuse(f"The sandbox is unavailable: {exc}")
    if config.base_url:
        # A gateway the tenant named: the outbound guard's verdict as for a model profile's base URL (publish
        # checked it too; checked again here for a name that resolves elsewhere since). sandboxd's egress
        # allow-list is the operator's second fence, not a substitute for this one.
        from agenticos import netguard

        try:
            await netguard.check_url(config.base_url, allowance=netguard.MODEL_HOSTS)
        except netguard.Refused as exc:
            return failures.refuse(f"The coding agent's gateway (base_url) was refused: {exc} Nothing was started.")
    if state.sign_in_id:
        key = await on_db_thread(_open_sign_in, str(deps.organization_id), state.sign_in_id)
    else:
        key = await on_db_thread(state.reveal)
        # Publish refuses a key saved for the other provider (publish.py); checked again here, by its prefix,
        # for a secret rotated since.
        mismatch = key_problem(config, key, kind="")
        if mismatch:
            return failures.refuse(mismatch + " Nothing was started; the agent's owner must bind the right key.")
    conversation = str(deps.conversation_id or deps.run_id).replace("-", "")
    folder = h.state_dir(conversation)
    try:
        await backend._ensure()  # the stored files, in the sandbox before the harness reads them
        session, baseline = (None, (0, 0)) if fresh_session else await _session(backend, folder, config.harness)
        if config.harness == "claude_code":
            launch = h.claude_launch(task=text, key=key, conversation=conversation,
                                     read_only=config.access == "read_only", model=config.model,
                                     base_url=config.base_url or _operator_url("ANTHROPIC"), session=session)
        elif state.sign_in_id:
            launch = h.codex_chatgpt_launch(task=text, conversation=conversation, model=config.model,
                                            session=session, base_url=_operator_url("CHATGPT"),
                                            token_url=_operator_token_url())
        else:
            launch = h.codex_launch(task=text, key=key, conversation=conversation, model=config.model,
                                    session=session, base_url=_operator_url("OPENAI"))
        # A sign-in is a file of the task's private home (outside /workspace, gone when the task ends).
        home = {h.CODEX_LOGIN_FILE: key} if state.sign_in_id else None
        started = await backend.client.start_task(backend.remote_id, launch.command,
                                                  timeout=config.timeout_minutes * 60, env=launch.env,
                                                  egress=launch.egress, home_files=home)
    except (SandboxdError, Exception) as exc:  # noqa: BLE001 — WorkspaceUnavailableError and sandboxd's refusals
        logger.info("coding agent not started: %s", type(exc).__name__)
        return failures.refuse(f"The coding agent could not start in the sandbox: {str(exc)[:300]}")
    running = (str(deps.run_id), str(ctx.tool_call_id))
    await on_db_thread(_remember, running, state.connection_id, backend.remote_id, started["id"],
                       config.timeout_minutes * 60, state.sign_in_id)
    try:
        return await _follow(ctx, backend, started["id"], config, text, folder, meter,
                             baseline if session else (0, 0))
    finally:
        # A worker that dies never gets here: the entry stays for the run's resumption to find (on_interrupted).
        await asyncio.shield(on_db_thread(_forget, running))


async def _follow(ctx: RunContext[Any], backend: Any, task_id: str, config: CodingAgentConfig, text: str,
                  folder: str, meter: Any, baseline: tuple[int, int]) -> dict[str, Any]:
    from agents.run_handle import on_db_thread

    progress = h.Progress(harness=config.harness, baseline=baseline)
    panel = Panel.open(ctx, config, text)
    await panel.started()
    offset = 0
    status: dict[str, Any] = {}
    try:
        while True:
            await asyncio.sleep(POLL_SECONDS)
            status = await backend.client.task(backend.remote_id, task_id, offset=offset)
            offset = int(status.get("offset") or offset)
            progress.feed(str(status.get("output") or ""))
            await panel.show(progress.drain())
            if status.get("state") == "finished":
                break
    except BaseException:
        # The person stopped the run (or following it failed): the whole process group goes, and what it spent
        # is still recorded.
        with contextlib.suppress(Exception):
            status = await asyncio.shield(backend.client.stop_task(backend.remote_id, task_id, offset=offset))
            progress.feed(str(status.get("output") or ""))
        await asyncio.shield(_sealed_again(ctx, status))
        usage = await asyncio.shield(on_db_thread(_record, meter, config.harness, config, progress.usage))
        with contextlib.suppress(Exception):
            await asyncio.shield(panel.close("stopped", usage))
        raise
    outcome = ("timed_out" if status.get("timed_out") else "stopped" if status.get("stopped")
               else "completed" if status.get("exit_code") == 0 and not progress.error else "failed")
    await _sealed_again(ctx, status)
    usage = await on_db_thread(_record, meter, config.harness, config, progress.usage)
    await panel.close(outcome, usage)
    return await _result(backend, status, progress, outcome, usage, folder, config)


async def _sealed_again(ctx: RunContext[Any], status: dict[str, Any]) -> None:
    """A finished task's refreshed sign-in, sealed over the same secret before anything else can fail."""
    from agents.run_handle import on_db_thread

    state: _State = ctx.deps.scratch["coding_agent"]
    if state.sign_in_id and status.get("home_changed"):
        try:
            await on_db_thread(_reseal, str(ctx.deps.organization_id), state.sign_in_id, status, ctx.deps.user_id,
                               ctx.deps.run_id)
        except Exception:  # noqa: BLE001 — the task's work stands; the old sign-in stays sealed (logged, no value)
            logger.warning("coding agent: the refreshed ChatGPT sign-in %s could not be sealed again",
                           state.sign_in_id, exc_info=False)


async def _result(backend: Any, status: dict[str, Any], progress: h.Progress, outcome: str, usage: dict[str, Any],
                  folder: str, config: CodingAgentConfig) -> dict[str, Any]:
    from workspaces.client import SandboxdError

    if progress.session:
        with contextlib.suppress(SandboxdError):
            counted = f":{progress.totals[0]}:{progress.totals[1]}" if config.harness == "codex" else ""
            await backend.client.write(backend.remote_id, f"{folder}/session",
                                       f"{config.harness}:{progress.session}{counted}\n".encode())
    status = {k: v for k, v in status.items() if k != "home_changed"}  # a refreshed sign-in never goes further
    # The harness's own state (.agenticos/) stays in the sandbox; the work comes back to the stored files.
    changed = [p for p in status.get("changed") or [] if not str(p).startswith(".agenticos/")]
    deleted = [p for p in status.get("deleted") or [] if not str(p).startswith(".agenticos/")]
    notes = await backend._bring_back({"changed": changed, "deleted": deleted})
    result: dict[str, Any] = {
        "status": outcome, "harness": h.LABELS[config.harness], "answer": progress.answer,
        "steps": progress.steps, "changed_files": [f"/workspace/{p}" for p in changed],
        "deleted_files": [f"/workspace/{p}" for p in deleted], "usage": usage,
    }
    if outcome == "timed_out":
        result["note"] = (f"The task ran past its {config.timeout_minutes}-minute limit and was stopped, with "
                          "everything it started.")
    elif outcome == "failed":
        result["note"] = (progress.error or str(status.get("stderr_tail") or "")[-500:]
                          or "The coding agent ended without an answer.")
    if notes:
        result["files_note"] = " ".join(notes)
    return result


TOOL = ToolDecl.from_function(run_coding_agent, side_effecting=True)


def _publish_problems(actor: Any, data: dict[str, Any], format_path: Any) -> list[dict[str, str]]:
    from capabilities.coding_agent.publish import coding_agent_problems

    return coding_agent_problems(actor, data, format_path)


CAPABILITY = Capability(
    id="coding_agent",
    name="Coding agent",
    category="analysis",
    description="Hands whole software tasks to Claude Code or Codex, working in this agent's own sandbox.",
    offers="a coding harness (Claude Code or Codex) that edits code and runs commands in the sandbox",
    examples=(
        "Fix the failing test in the project I uploaded and tell me what was wrong.",
        "Add a --json flag to the CLI in /workspace/tool and update its README.",
        "Read the repository and explain how requests are authenticated.",
    ),
    never_does=(
        "It never runs outside the agent's sandbox, never reaches any network address but its model's API, "
        "never puts the key on a command line, and never starts a task once a budget is used up; with "
        "“Read only” it never edits a file or runs a command."
    ),
    tools=(TOOL,),
    scopes=("sandbox:execute",),
    key=KeyRequirement(kind="api_key", description="An Anthropic API key or Claude subscription token (Claude "
                                                   "Code), or an OpenAI API key or a ChatGPT sign-in (Codex)",
                       also=(SIGN_IN,)),
    config_model=CodingAgentConfig,
    voice="hand_off",
    build=build,
    hooks=RunHooks(publish_problems=_publish_problems, on_interrupted=_stop_interrupted),
)

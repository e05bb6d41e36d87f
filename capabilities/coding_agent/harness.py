"""The two coding CLIs as this capability drives them: the command line of a task, its environment, and what
their event streams (`claude -p --output-format stream-json`, `codex exec --json`) say.

The key travels in the environment only: the command line names the variable (Codex's `env_key`), never the
value. The model's API is reached through sandboxd's egress relay (sandboxd/egress.py): the URL the CLI is given
is the upstream's own host with the port the relay listens on inside the jail (`local_port`).

Each conversation keeps its harness session in the sandbox, in `.agenticos/coding-agent/<conversation>/`:
`session` (the id the CLI reported), Claude Code's config folder and Codex's home. A session the sandbox no
longer has is dropped by the command itself (the `--resume` only when its transcript is there), so the task
starts fresh, once, instead of failing.

Codex signed in with ChatGPT (`codex_chatgpt_launch`) is the exception: its sign-in is a file (`auth.json` in
CODEX_HOME), so its CODEX_HOME is the task's private home outside /workspace (sandboxd's `home_files`, mounted at
`/home/task`, removed when the task ends) — never in the workspace, where the agent's file tools, its shell and
anything the tenant runs there later would read it. Only its `sessions` folder is the conversation's, in the
workspace beside the others (a link from the private home), so the next task resumes the thread.
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass, field
from typing import Any, Literal
from urllib.parse import urlsplit, urlunsplit

Harness = Literal["claude_code", "codex"]
LABELS = {"claude_code": "Claude Code", "codex": "Codex"}
ANTHROPIC_URL = "https://api.anthropic.com"
OPENAI_URL = "https://api.openai.com/v1"
# Where Codex signed in with ChatGPT sends its model requests and trades its refresh token (its built-in defaults).
CHATGPT_URL = "https://chatgpt.com/backend-api/codex"
CHATGPT_TOKEN_URL = "https://auth.openai.com/oauth/token"  # noqa: S105 — an address, not a password
TASK_HOME = "/home/task"  # sandboxd/tasks.py HOME_MOUNT: the task's private home, outside /workspace
CODEX_LOGIN_FILE = "auth.json"
STATE_DIR = ".agenticos/coding-agent"
READ_ONLY_TOOLS = "Read,Grep,Glob"
PREVIEW = 2000


def local_port(port: int) -> int:
    """sandboxd's rule (egress.py): a port below 1024 is heard inside the jail 10000 higher."""
    return port + 10000 if port < 1024 else port


def upstream(url: str) -> tuple[str, str]:
    """(`host:port` to ask sandboxd's egress for, the URL the CLI is given inside the jail)."""
    parts = urlsplit(url)
    host = (parts.hostname or "").lower()
    port = parts.port or (443 if parts.scheme == "https" else 80)
    inside = urlunsplit((parts.scheme, f"{host}:{local_port(port)}", parts.path.rstrip("/"), "", ""))
    return f"{host}:{port}", inside


def state_dir(conversation: str) -> str:
    return f"{STATE_DIR}/{conversation}"


@dataclass(frozen=True)
class Launch:
    command: str
    env: dict[str, str]
    egress: list[str]


def claude_launch(*, task: str, key: str, conversation: str, read_only: bool, model: str | None,
                  base_url: str | None, session: str | None) -> Launch:
    folder = state_dir(conversation)
    target, inside = upstream(base_url or ANTHROPIC_URL)
    env = {"AGENTICOS_TASK": task, "ANTHROPIC_BASE_URL": inside, "CLAUDE_CONFIG_DIR": f"/workspace/{folder}/claude",
           "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1",
           "AGENTICOS_SESSION": session or ""}
    # A subscription token (claude setup-token) signs in to Anthropic itself; an API key or a gateway's key
    # goes as the API key.
    env["CLAUDE_CODE_OAUTH_TOKEN" if key.startswith("sk-ant-oat") and not base_url else "ANTHROPIC_API_KEY"] = key
    args = ["claude", "-p", '"$AGENTICOS_TASK"', "--output-format", "stream-json", "--verbose"]
    if read_only:
        # Plan mode with only the reading tools: no edit tool and no shell (no prefix list makes a shell
        # read-only), and nothing else can be approved.
        args += ["--permission-mode", "plan", "--tools", READ_ONLY_TOOLS]
    else:
        args += ["--dangerously-skip-permissions"]
    if model:
        args += ["--model", shlex.quote(model)]
    resume = ('if [ -n "$AGENTICOS_SESSION" ] && [ -f "$CLAUDE_CONFIG_DIR/projects/-workspace/'
              '$AGENTICOS_SESSION.jsonl" ]; then set -- --resume "$AGENTICOS_SESSION"; else set --; fi')
    command = f'mkdir -p "$CLAUDE_CONFIG_DIR"\n{resume}\nexec {" ".join(args)} "$@"'
    return Launch(command=command, env=env, egress=[target])


def codex_launch(*, task: str, key: str, conversation: str, model: str | None, session: str | None,
                 base_url: str | None = None) -> Launch:
    folder = state_dir(conversation)
    target, inside = upstream(base_url or OPENAI_URL)
    env = {"AGENTICOS_TASK": task, "CODEX_HOME": f"/workspace/{folder}/codex", "AGENTICOS_CODEX_KEY": key,
           "AGENTICOS_SESSION": session or ""}
    provider = (f'model_providers.agenticos={{name="OpenAI", base_url="{inside}", '
                'env_key="AGENTICOS_CODEX_KEY", wire_api="responses"}')
    args = ["codex", "exec", "--json", "--dangerously-bypass-approvals-and-sandbox", "--skip-git-repo-check",
            "-c", shlex.quote('model_provider="agenticos"'), "-c", shlex.quote(provider)]
    if model:
        args += ["-m", shlex.quote(model)]
    resume = ('if [ -n "$AGENTICOS_SESSION" ] && find "$CODEX_HOME/sessions" -name "*$AGENTICOS_SESSION*.jsonl" '
              '2>/dev/null | grep -q .; then set -- resume "$AGENTICOS_SESSION"; else set --; fi')
    command = f'mkdir -p "$CODEX_HOME"\n{resume}\nexec {" ".join(args)} "$@" "$AGENTICOS_TASK"'
    return Launch(command=command, env=env, egress=[target])


def codex_chatgpt_launch(*, task: str, conversation: str, model: str | None, session: str | None,
                         base_url: str | None = None, token_url: str | None = None) -> Launch:
    """Codex signed in with ChatGPT: the sign-in travels as a file of the task's private home (the caller sends it
    as sandboxd's `home_files`), never in the environment or on the command line. The provider is Codex's
    OpenAI one (`requires_openai_auth`: the sign-in's bearer and account header) at the relay's address, and the
    token endpoint Codex refreshes at is named too (CODEX_REFRESH_TOKEN_URL_OVERRIDE), because inside the jail it
    is the relay's port, not 443."""
    folder = state_dir(conversation)
    target, inside = upstream(base_url or CHATGPT_URL)
    token_target, token_inside = upstream(token_url or CHATGPT_TOKEN_URL)
    env = {"AGENTICOS_TASK": task, "CODEX_HOME": TASK_HOME, "AGENTICOS_SESSIONS": f"/workspace/{folder}/codex/sessions",
           "CODEX_REFRESH_TOKEN_URL_OVERRIDE": token_inside, "AGENTICOS_SESSION": session or ""}
    provider = (f'model_providers.agenticos={{name="OpenAI", base_url="{inside}", requires_openai_auth=true, '
                'wire_api="responses"}')
    args = ["codex", "exec", "--json", "--dangerously-bypass-approvals-and-sandbox", "--skip-git-repo-check",
            "-c", shlex.quote('model_provider="agenticos"'), "-c", shlex.quote('cli_auth_credentials_store="file"'),
            "-c", shlex.quote(provider)]
    if model:
        args += ["-m", shlex.quote(model)]
    link = 'mkdir -p "$AGENTICOS_SESSIONS" && ln -sfn "$AGENTICOS_SESSIONS" "$CODEX_HOME/sessions"'
    resume = ('if [ -n "$AGENTICOS_SESSION" ] && find "$CODEX_HOME/sessions/" -name "*$AGENTICOS_SESSION*.jsonl" '
              '2>/dev/null | grep -q .; then set -- resume "$AGENTICOS_SESSION"; else set --; fi')
    command = f'{link}\n{resume}\nexec {" ".join(args)} "$@" "$AGENTICOS_TASK"'
    egress = [target] if token_target == target else [target, token_target]
    return Launch(command=command, env=env, egress=egress)


# ------------------------------------------------------------------ what the event streams say


@dataclass
class Usage:
    model: str
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0


@dataclass
class Progress:
    """Everything read from one task's events so far. `new` collects the panel's changes since last drained:
    ("text", text) | ("tool", id, name, args) | ("result", id, ok, content)."""

    harness: Harness
    session: str = ""
    answer: str = ""
    steps: list[dict[str, Any]] = field(default_factory=list)
    usage: list[Usage] = field(default_factory=list)
    error: str = ""
    finished: bool = False
    new: list[tuple[Any, ...]] = field(default_factory=list)
    # Codex reports a resumed thread's usage from its start: what the earlier tasks of the session already
    # counted (kept beside the session id) is taken off, and the new totals kept for the next task.
    baseline: tuple[int, int] = (0, 0)
    totals: tuple[int, int] = (0, 0)
    _pending: str = ""

    def feed(self, chunk: str) -> None:
        text = self._pending + chunk
        lines = text.split("\n")
        self._pending = lines.pop()
        for line in lines:
            line = line.strip()
            if not line:
                continue
            try:
                event = json.loads(line)
            except ValueError:
                continue
            if isinstance(event, dict):
                (self._claude if self.harness == "claude_code" else self._codex)(event)

    def drain(self) -> list[tuple[Any, ...]]:
        out, self.new = self.new, []
        return out

    def _text(self, text: str) -> None:
        if text.strip():
            self.steps.append({"type": "text", "text": text})
            self.new.append(("text", text))

    def _tool(self, call_id: str, name: str, args: Any) -> None:
        self.steps.append({"type": "tool", "id": call_id, "name": name, "args": args, "status": "running",
                           "result": None})
        self.new.append(("tool", call_id, name, args))

    def _result(self, call_id: str, ok: bool, content: Any) -> None:
        if isinstance(content, list):
            content = "\n".join(str(b.get("text", "")) if isinstance(b, dict) else str(b) for b in content)
        content = str(content if content is not None else "")
        if len(content) > PREVIEW:
            content = content[:PREVIEW] + " […]"
        for step in self.steps:
            if step["type"] == "tool" and step["id"] == call_id:
                step["status"], step["result"] = ("ok" if ok else "error"), content
        self.new.append(("result", call_id, ok, content))

    # Claude Code: system/init, assistant and user messages, then one `result`.
    def _claude(self, event: dict[str, Any]) -> None:
        kind = event.get("type")
        if event.get("session_id") and not self.session:
            self.session = str(event["session_id"])
        if kind == "assistant" and not event.get("parent_tool_use_id"):
            for block in (event.get("message") or {}).get("content") or []:
                if block.get("type") == "text":
                    self._text(str(block.get("text") or ""))
                elif block.get("type") == "tool_use":
                    self._tool(str(block.get("id")), str(block.get("name")), block.get("input"))
        elif kind == "user" and not event.get("parent_tool_use_id"):
            content = (event.get("message") or {}).get("content")
            for block in content if isinstance(content, list) else []:
                if isinstance(block, dict) and block.get("type") == "tool_result":
                    self._result(str(block.get("tool_use_id")), not block.get("is_error"), block.get("content"))
        elif kind == "result":
            self.finished = True
            self.answer = str(event.get("result") or "")
            if event.get("is_error"):
                self.error = self.answer or str(event.get("subtype") or "error")
            for model, used in (event.get("modelUsage") or {}).items():
                self.usage.append(Usage(model=str(model), input_tokens=int(used.get("inputTokens") or 0),
                                        output_tokens=int(used.get("outputTokens") or 0),
                                        cache_read_tokens=int(used.get("cacheReadInputTokens") or 0)))

    # Codex: thread.started, item.started / item.completed, turn.completed (usage) or turn.failed.
    def _codex(self, event: dict[str, Any]) -> None:
        kind = event.get("type")
        if kind == "thread.started":
            self.session = str(event.get("thread_id") or "")
        elif kind in ("item.started", "item.completed"):
            item = event.get("item") or {}
            item_type, item_id = item.get("type"), str(item.get("id"))
            if item_type == "agent_message" and kind == "item.completed":
                self.answer = str(item.get("text") or "")
                self._text(self.answer)
            elif item_type == "command_execution":
                if kind == "item.started":
                    self._tool(item_id, "shell", {"command": item.get("command")})
                else:
                    if not any(s.get("id") == item_id for s in self.steps if s["type"] == "tool"):
                        self._tool(item_id, "shell", {"command": item.get("command")})
                    self._result(item_id, item.get("exit_code") == 0, item.get("aggregated_output"))
            elif item_type in ("file_change", "mcp_tool_call", "web_search") and kind == "item.completed":
                self._tool(item_id, str(item_type), {k: v for k, v in item.items() if k not in ("id", "type")})
                self._result(item_id, item.get("status") != "failed", item.get("status") or "")
        elif kind == "turn.completed":
            self.finished = True
            used = event.get("usage") or {}
            total_in, total_out = int(used.get("input_tokens") or 0), int(used.get("output_tokens") or 0)
            base_in, base_out = self.baseline if total_in >= self.baseline[0] else (0, 0)
            self.totals = (total_in, total_out)
            self.usage.append(Usage(model="", input_tokens=total_in - base_in,
                                    output_tokens=max(total_out - base_out, 0),
                                    cache_read_tokens=int(used.get("cached_input_tokens") or 0)))
        elif kind == "turn.failed":
            self.finished = True
            self.error = str((event.get("error") or {}).get("message") or "the task failed")

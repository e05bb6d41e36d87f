"""The coding agent with the real CLIs (Claude Code 2.1.288, Codex 0.160.0 from `make install`) in a real sandbox
(sandboxd, bubblewrap), their model APIs the local fakes (Anthropic Messages and OpenAI Responses, SSE with tool
calls) reached through sandboxd's egress relay: a file edited and kept, the session continued, spend recorded,
timeout and stop killing the process group, the budget and publish's refusals."""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path

import httpx
import pytest

from agents.diff import format_path
from agents.models import RunStatus
from capabilities.coding_agent import publish as coding_publish
from capabilities.coding_agent.capability import CodingAgentConfig
from governance.models import SpendEntry
from tests import factories
from tests.fakes.anthropic_messages import FakeAnthropic
from tests.fakes.anthropic_messages import Turn as ClaudeTurn
from tests.fakes.openai_responses_sse import FakeResponsesSSE
from tests.fakes.openai_responses_sse import Turn as CodexTurn
from tests.runner.conftest import actor_of, publish
from tests.sandbox.sandboxd_server import needs_bwrap
from tests.sandbox.test_sandbox_runs import turn
from workspaces.models import Workspace, WorkspaceFile

ROOT = Path(__file__).resolve().parents[2]
WORKBENCH = ROOT / ".agenticos" / "workbench" / "node_modules" / ".bin"
needs_clis = pytest.mark.skipif(not (WORKBENCH / "claude").exists() or not (WORKBENCH / "codex").exists(),
                                reason="the coding CLIs are not installed in .agenticos/workbench (make install)")
pytestmark = [needs_bwrap, needs_clis]
ANTHROPIC_KEY = "sk-ant-api03-test-coding-agent-key-0001"
OPENAI_KEY = "sk-proj-test-coding-agent-key-0002"


@pytest.fixture(scope="module")
def fakes():
    anthropic, openai = FakeAnthropic().start(), FakeResponsesSSE().start()
    yield anthropic, openai
    anthropic.stop()
    openai.stop()


@pytest.fixture(scope="module")
def coding_sandboxd(fakes):
    """A sandboxd whose egress allow-list names the two fakes (and limits a harness fits in)."""
    from tests.sandbox import sandboxd_server as server

    anthropic, openai = fakes
    saved = dict(server.LIMITS)
    server.LIMITS.update({"SANDBOXD_EGRESS_ALLOW": f"127.0.0.1:{anthropic.port},127.0.0.1:{openai.port}",
                          "SANDBOXD_MEMORY_MB": "4096", "SANDBOXD_MAX_PROCESSES": "512", "SANDBOXD_DISK_MB": "64",
                          "SANDBOXD_CPU_SECONDS": "120"})
    try:
        running = server.start()
    finally:
        server.LIMITS.clear()
        server.LIMITS.update(saved)
    yield running
    server.stop(running)


@pytest.fixture
def coding(fakes, coding_sandboxd, settings):
    anthropic, openai = fakes
    for fake in fakes:
        fake.script.clear()
        fake.requests.clear()
        fake.hold.set()
    settings.SANDBOXD_URL = coding_sandboxd.url
    settings.SANDBOXD_TOKEN = ""
    settings.SANDBOXD_TOKEN_FILE = str(coding_sandboxd.token_file)
    settings.CODING_AGENT_ANTHROPIC_BASE_URL = anthropic.url
    settings.CODING_AGENT_OPENAI_BASE_URL = openai.url
    return anthropic, openai


def coding_agent(org, owner, *, key: str, budget=None, sandbox=None, **config):
    secret = factories.secret(org, value=key)
    return publish(org, owner, budget=budget, capabilities=[
        {"id": "sandbox", "config": sandbox or {"backend": "service"}},
        {"id": "coding_agent", "config": config, "secret_id": str(secret.pk)}])


def turn_with_frames(scripted_model, org, user, agent_version, calls):
    from tests.runner.test_execute import run_now, start
    from tests.sandbox.helpers import ToolScript

    script = ToolScript(calls)
    scripted_model(script.model())
    agent, version = agent_version
    run = start(org, user, agent, version, prompt="work")
    frames = run_now(run)
    run.refresh_from_db()
    return script, run, frames


def task(text: str, **extra) -> tuple[str, dict]:
    return ("run_coding_agent", {"task": text, **extra})


def processes_with(marker: str) -> list[int]:
    """Host processes whose environment carries `marker` (a harness, or anything it started, still alive)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                environ = (entry / "environ").read_bytes()
            except OSError:
                continue
            if marker.encode() in environ:
                found.append(int(entry.name))
    return found


@pytest.mark.django_db(transaction=True)
def test_claude_code_edits_a_file_in_the_sandbox_and_the_next_task_continues_its_session(org, owner, scripted_model,
                                                                                         coding):
    anthropic, _ = coding
    agent = coding_agent(org, owner, key=ANTHROPIC_KEY)
    anthropic.queue(ClaudeTurn.calls("Write", {"file_path": "/workspace/app/hello.py", "content": "print('hi')\n"}),
                    ClaudeTurn.says("I wrote app/hello.py."))
    script, run, frames = turn_with_frames(scripted_model, org, owner, agent, [task("Create app/hello.py printing hi.")])

    assert run.status == RunStatus.COMPLETED
    assert "run_coding_agent" in script.offered
    result = script.results[0]
    assert "'status': 'completed'" in result and "I wrote app/hello.py." in result
    assert "'/workspace/app/hello.py'" in result and "'name': 'Write'" in result
    assert ANTHROPIC_KEY not in result
    # The edit is kept with the stored files; the harness's own state stays in the sandbox.
    row = WorkspaceFile.objects.get(path="/workspace/app/hello.py")
    assert bytes(row.data) == b"print('hi')\n"
    assert not WorkspaceFile.objects.filter(path__startswith="/workspace/.agenticos/").exists()
    # The real CLI spoke to the fake with the key from its environment.
    scripted = anthropic.scripted()
    assert len(scripted) == 2 and {r.api_key for r in scripted} == {ANTHROPIC_KEY}
    assert scripted[1].tool_results and "hello.py" in str(scripted[1].tool_results[0]["content"])
    # Its tokens are on the ledger and the run.
    spend = SpendEntry.objects.get(run=run, kind="coding_agent")
    assert (spend.input_tokens, spend.output_tokens) == (200, 40) and spend.model.startswith("claude_code:")
    run.refresh_from_db()
    assert run.input_tokens >= 200
    # Live: a panel of its own under Claude Code's name, each step as it happened, closed with the usage.
    panel_frames = [f for f in frames if f["type"].startswith("subagent_")]
    assert [f["type"] for f in panel_frames] == ["subagent_started", "subagent_tool_call", "subagent_tool_result",
                                                  "subagent_delta", "subagent_finished"]
    started, call, returned, said, finished = (f["data"] for f in panel_frames)
    assert started["name"] == "Claude Code" and started["kind"] == "coding_agent"
    assert call["tool_name"] == "Write" and call["args"]["file_path"] == "/workspace/app/hello.py"
    assert returned["ok"] and said["content"] == "I wrote app/hello.py."
    assert finished["status"] == "completed" and finished["usage"]["input_tokens"] == 200
    # Reopened: the same panel is in the transcript, after the tool step.
    from agents.models import Conversation, Message
    from console.selectors import conversation_turns

    message = Message.objects.get(run=run, role=Message.Role.ASSISTANT)
    kinds = [p["type"] for p in message.parts]
    assert kinds.index("tool") < kinds.index("delegation")
    reopened = conversation_turns(Conversation.objects.get(pk=run.conversation_id))
    panel = next(p for p in reopened[-1]["parts"] if p["type"] == "delegation")
    assert panel["task_id"] == started["task_id"] and panel["status"] == "completed"
    assert [p["type"] for p in panel["parts"]] == ["tool", "text"] and panel["parts"][0]["status"] == "ok"
    assert ANTHROPIC_KEY not in json.dumps(frames) and ANTHROPIC_KEY not in json.dumps(message.parts)

    # The same chat's next task resumes the session: Claude Code sends what the first task said.
    anthropic.requests.clear()
    anthropic.queue(ClaudeTurn.says("It prints hi."))
    again, second = turn(scripted_model, org, owner, agent, [task("What does app/hello.py print?")],
                         conversation=run.conversation)
    assert second.status == RunStatus.COMPLETED and "It prints hi." in again.results[0]
    history = str(anthropic.scripted()[0].json["messages"])
    assert "Create app/hello.py printing hi." in history and "What does app/hello.py print?" in history


@pytest.mark.django_db(transaction=True)
def test_read_only_claude_code_has_no_tool_that_writes_or_runs(org, owner, scripted_model, coding):
    anthropic, _ = coding
    agent = coding_agent(org, owner, key=ANTHROPIC_KEY, access="read_only")
    anthropic.queue(ClaudeTurn.calls("Write", {"file_path": "/workspace/owned.txt", "content": "x"}),
                    ClaudeTurn.says("I could not write."))
    script, run = turn(scripted_model, org, owner, agent, [task("Write owned.txt.")])
    assert run.status == RunStatus.COMPLETED
    offered = {t["name"] for t in anthropic.scripted()[0].json["tools"]}
    assert {"Read", "Grep", "Glob"} <= offered and not offered & {"Write", "Edit", "Bash", "NotebookEdit"}
    # The model's Write came back to it as an error, and nothing was written.
    assert anthropic.scripted()[1].tool_results[0].get("is_error") is True
    assert "'name': 'Write'" in script.results[0] and "'status': 'error'" in script.results[0]
    assert not WorkspaceFile.objects.filter(path="/workspace/owned.txt").exists()


@pytest.mark.django_db(transaction=True)
def test_a_chat_never_continues_another_chats_session_in_a_sandbox_they_share(org, owner, member, scripted_model,
                                                                              coding):
    anthropic, _ = coding
    agent = coding_agent(org, owner, key=ANTHROPIC_KEY, sandbox={"backend": "service", "session_scope": "agent"})
    anthropic.queue(ClaudeTurn.says("Noted the launch code."))
    _, first = turn(scripted_model, org, owner, agent, [task("Remember the launch code 7431.")])
    assert first.status == RunStatus.COMPLETED
    anthropic.requests.clear()
    anthropic.queue(ClaudeTurn.says("I know nothing."))
    again, second = turn(scripted_model, org, member, agent, [task("What was the launch code?")])
    assert second.status == RunStatus.COMPLETED and second.conversation_id != first.conversation_id
    assert Workspace.objects.filter(agent=agent[0]).count() == 1  # one sandbox, shared by both chats
    assert "7431" not in str(anthropic.scripted()[0].json["messages"])


@pytest.mark.django_db(transaction=True)
def test_codex_edits_a_file_and_without_a_model_its_spend_is_partial(org, owner, scripted_model, coding):
    _, openai = coding
    agent = coding_agent(org, owner, key=OPENAI_KEY, harness="codex")
    openai.queue(CodexTurn.calls("exec_command", {"cmd": "mkdir -p src && printf 'x = 1\\n' > src/x.py"}),
                 CodexTurn.says("Created src/x.py."))
    script, run = turn(scripted_model, org, owner, agent, [task("Create src/x.py setting x to 1.")])

    assert run.status == RunStatus.COMPLETED
    result = script.results[0]
    assert "'status': 'completed'" in result and "Created src/x.py." in result
    assert "'/workspace/src/x.py'" in result and "'name': 'shell'" in result
    assert bytes(WorkspaceFile.objects.get(path="/workspace/src/x.py").data) == b"x = 1\n"
    assert {r.bearer for r in openai.scripted()} == {OPENAI_KEY}
    assert openai.scripted()[1].function_outputs  # the command's output went back to the model
    spend = SpendEntry.objects.get(run=run, kind="coding_agent")
    assert spend.model == "codex:unknown" and spend.is_partial and spend.input_tokens == 300
    run.refresh_from_db()
    assert run.cost_is_partial

    # The chat's next task resumes Codex's thread (it sends the first task's words again), and only the new
    # request's tokens are recorded (Codex counts a resumed thread's usage from its start).
    openai.requests.clear()
    openai.queue(CodexTurn.says("x is 1."))
    again, second = turn(scripted_model, org, owner, agent, [task("What is x?")], conversation=run.conversation)
    assert second.status == RunStatus.COMPLETED and "x is 1." in again.results[0]
    history = str(openai.scripted()[0].json["input"])
    assert "Create src/x.py setting x to 1." in history and "What is x?" in history
    assert SpendEntry.objects.get(run=second, kind="coding_agent").input_tokens == 150


@pytest.mark.django_db(transaction=True)
def test_a_budget_used_up_after_the_models_request_starts_nothing(org, owner, scripted_model, coding):
    """Another run spends the agent's budget while this one's model is answering: the coding agent's own check,
    before its task, refuses — no harness started, nothing reached the model API, nothing recorded."""
    from asgiref.sync import sync_to_async
    from pydantic_ai.models.function import DeltaToolCall, FunctionModel

    anthropic, _ = coding
    agent = coding_agent(org, owner, key=ANTHROPIC_KEY, budget=1)
    calls = []

    async def stream(messages, info):
        calls.append(len(messages))
        if len(calls) == 1:
            await sync_to_async(SpendEntry.objects.create)(organization=org, agent=agent[0], kind="model_request",
                                                           cost_usd=5)
            yield {0: DeltaToolCall(name="run_coding_agent", json_args='{"task": "Create a file."}',
                                    tool_call_id="call-1")}
            return
        yield "done"

    scripted_model(FunctionModel(stream_function=stream, model_name="scripted"))
    from agents.runs import start_run
    from tests.runner.test_execute import run_now

    run = start_run(agent=agent[0], version=agent[1], surface="web", prompt="work", user=owner, acting_role="owner",
                    enqueue=False)
    run_now(run)
    run.refresh_from_db()
    assert run.status == RunStatus.BUDGET_EXCEEDED
    assert anthropic.requests == []
    assert not SpendEntry.objects.filter(run=run, kind="coding_agent").exists()


def processes_with_argument(text: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if text.encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


@pytest.mark.django_db(transaction=True)
def test_a_person_stopping_the_run_kills_the_harness_and_its_spend_is_still_recorded(org, owner, scripted_model,
                                                                                     coding):
    import threading

    from agents.models import Run
    from agents.runs import request_stop
    from tests.runner.test_execute import run_now, start
    from tests.sandbox.helpers import ToolScript

    anthropic, _ = coding
    anthropic.hold.clear()  # the harness waits on its model until the person stops the run
    agent, version = coding_agent(org, owner, key=ANTHROPIC_KEY)
    marker = f"marker-{uuid.uuid4().hex}"
    scripted_model(ToolScript([task(f"Refactor everything {marker}.")]).model())
    run = start(org, owner, agent, version, prompt="work")
    frames: list = []
    worker = threading.Thread(target=lambda: frames.extend(run_now(run)))
    worker.start()
    deadline = time.monotonic() + 60
    while not anthropic.scripted() or not processes_with(marker):
        assert time.monotonic() < deadline and worker.is_alive()
        time.sleep(0.2)
    request_stop(Run.objects.get(pk=run.pk))
    worker.join(60)
    anthropic.hold.set()

    run.refresh_from_db()
    assert run.status == RunStatus.CANCELLED
    assert processes_with(marker) == []  # the whole process group went with the stop
    finished = next(f["data"] for f in frames if f["type"] == "subagent_finished")
    assert finished["status"] == "stopped"
    spend = SpendEntry.objects.get(run=run, kind="coding_agent")  # ended before its harness said: unpriced
    assert spend.is_partial and spend.cost_usd == 0


@pytest.mark.django_db(transaction=True)
def test_a_delegate_reaches_the_coding_agent_in_the_parents_sandbox_when_it_is_shared(org, owner, scripted_model,
                                                                                      coding):
    """The delegate binds the coding agent; the parent shares its sandbox (share_with_delegates): the harness works
    in the parent's container, and the file it writes is the parent's."""
    anthropic, _ = coding
    coder, _ = coding_agent(org, owner, key=ANTHROPIC_KEY)
    lead = publish(org, owner, name="Lead", capabilities=[
        {"id": "sandbox", "config": {"backend": "service"}},
        {"id": "subagents", "config": {"share_with_delegates": ["sandbox"]}}],
        subagents=[{"name": "coder", "description": "Writes code", "agent_id": str(coder.pk)}])
    anthropic.queue(ClaudeTurn.calls("Write", {"file_path": "/workspace/shared.txt", "content": "from the coder\n"}),
                    ClaudeTurn.says("Wrote shared.txt."))
    script, run = turn(scripted_model, org, owner, lead, [
        ("task", {"description": "Write shared.txt.", "subagent_type": "coder"}),
        task("Write shared.txt saying 'from the coder'.")])

    assert run.status == RunStatus.COMPLETED, run.error
    assert "Wrote shared.txt." in script.results[0]
    parents = Workspace.objects.get(agent=lead[0])
    row = WorkspaceFile.objects.get(path="/workspace/shared.txt")
    assert row.workspace_id == parents.pk and bytes(row.data) == b"from the coder\n"
    assert not Workspace.objects.filter(agent=coder).exists()


def _start(server, workspace: str, command: str, timeout: float, egress: list[str], env: dict[str, str]):
    headers = {"Authorization": f"Bearer {server.token}"}
    httpx.post(server.url + "/v1/workspaces", json={"id": workspace, "runtime": "workbench"}, headers=headers,
               timeout=30).raise_for_status()
    answer = httpx.post(server.url + f"/v1/workspaces/{workspace}/tasks", headers=headers, timeout=30,
                        json={"command": command, "timeout": timeout, "egress": egress, "env": env})
    assert answer.status_code == 201, answer.text
    return answer.json()["id"], headers


def _claude_task(fake, marker: str) -> tuple[str, list[str], dict[str, str]]:
    from capabilities.coding_agent import harness

    launch = harness.claude_launch(task=f"Wait {marker}.", key=ANTHROPIC_KEY, conversation="c1", read_only=False, model=None,
                                   base_url=fake.url, session=None)
    return launch.command, launch.egress, launch.env


def test_a_task_past_its_timeout_and_a_stopped_one_are_killed_with_their_process_group(coding, coding_sandboxd):
    anthropic, _ = coding
    anthropic.hold.clear()  # the harness waits on its model for as long as the test needs
    marker = f"marker-{uuid.uuid4().hex}"
    command, egress, env = _claude_task(anthropic, marker)

    task_id, headers = _start(coding_sandboxd, "timeout-ws", command, 3, egress, env)
    deadline = time.monotonic() + 60
    while (status := httpx.get(f"{coding_sandboxd.url}/v1/workspaces/timeout-ws/tasks/{task_id}", headers=headers,
                               timeout=30).json())["state"] != "finished":
        assert time.monotonic() < deadline
        time.sleep(0.3)
    assert status["timed_out"] and status["exit_code"] != 0
    assert processes_with(marker) == []

    anthropic.requests.clear()
    task_id, headers = _start(coding_sandboxd, "stop-ws", command, 100, egress, env)
    deadline = time.monotonic() + 60
    while not anthropic.scripted():  # the harness is running and waiting on its model
        assert time.monotonic() < deadline
        time.sleep(0.2)
    assert processes_with(marker)  # the harness, found by its environment
    assert processes_with(ANTHROPIC_KEY) and processes_with_argument(ANTHROPIC_KEY) == []  # env only
    stopped = httpx.delete(f"{coding_sandboxd.url}/v1/workspaces/stop-ws/tasks/{task_id}", headers=headers,
                           timeout=30).json()
    assert stopped["state"] == "finished" and stopped["stopped"] and not stopped["timed_out"]
    assert processes_with(marker) == []
    anthropic.hold.set()


def test_egress_outside_the_allow_list_is_refused_and_a_task_without_it_reaches_nothing(coding, coding_sandboxd):
    headers = {"Authorization": f"Bearer {coding_sandboxd.token}"}
    httpx.post(coding_sandboxd.url + "/v1/workspaces", json={"id": "egress-ws", "runtime": "workbench"},
               headers=headers, timeout=30).raise_for_status()
    refused = httpx.post(coding_sandboxd.url + "/v1/workspaces/egress-ws/tasks", headers=headers, timeout=30,
                         json={"command": "true", "egress": ["169.254.169.254:80"]})
    assert refused.status_code == 400 and "allow-list" in refused.json()["error"]["message"]
    anthropic, _ = coding
    task_id, _ = _start(coding_sandboxd, "egress-ws", f"node -e \"require('http').get('http://127.0.0.1:"
                        f"{anthropic.port}/', () => console.log('REACHED')).on('error', () => console.log('NO'))\"",
                        30, [], {})
    while (status := httpx.get(f"{coding_sandboxd.url}/v1/workspaces/egress-ws/tasks/{task_id}", headers=headers,
                               timeout=30).json())["state"] != "finished":
        time.sleep(0.3)
    assert status["output"].strip() == "NO" and anthropic.requests == []


@pytest.mark.django_db
def test_publish_refuses_a_sandbox_without_a_shell_and_a_key_of_the_other_provider(org, owner, outsider_org):
    actor = actor_of(owner, org)
    anthropic = factories.secret(org, value=ANTHROPIC_KEY)
    openai = factories.secret(org, value=OPENAI_KEY)
    custom = factories.secret(org, value="gw-1234", kind="custom")
    theirs = factories.secret(outsider_org, value=OPENAI_KEY)

    def problems(secret, *, sandbox=None, **config):
        bindings = [] if sandbox is False else [{"id": "sandbox", "config": sandbox or {"backend": "service"}}]
        data = {"capabilities": [*bindings, {"id": "coding_agent", "config": config, "secret_id": str(secret.pk)}]}
        return [(p["field"], p["message"]) for p in coding_publish.coding_agent_problems(actor, data, format_path)]

    assert problems(anthropic) == []
    assert problems(openai, harness="codex") == []
    assert problems(custom) == [] and problems(custom, harness="codex") == []
    assert problems(openai, base_url="https://1.1.1.1/api") == []  # a gateway's key (a literal: no DNS here)
    # The gateway passes the outbound guard like a model profile's base URL.
    for inside, why in (("http://127.0.0.1:9/api", "MODEL_ALLOWED_PRIVATE_HOSTS"),
                        ("http://10.0.0.7/v1", "MODEL_ALLOWED_PRIVATE_HOSTS"),
                        ("http://169.254.169.254/latest", "always refused")):
        [(field, message)] = problems(openai, base_url=inside)
        assert field.endswith(".config.base_url") and why in message, (inside, message)
    [(field, message)] = problems(openai)
    assert field.endswith(".secret_id") and "Claude Code takes an Anthropic API key" in message
    [(_, message)] = problems(anthropic, harness="codex")
    assert "Codex takes an OpenAI API key" in message
    [(field, message)] = problems(anthropic, sandbox={"backend": "state"})
    assert field.endswith(".id") and "service backend" in message
    assert "service backend" in problems(anthropic, sandbox={"backend": "service", "include_execute": False})[0][1]
    assert "bind sandbox" in problems(anthropic, sandbox=False)[0][1]
    # Another organization's secret is neither revealed nor judged here (the registry answers "No such secret").
    assert problems(theirs) == []

    with pytest.raises(ValueError, match="Codex has no read_only"):
        CodingAgentConfig(harness="codex", access="read_only")
    assert CodingAgentConfig(harness="codex", base_url="https://openrouter.ai/api").base_url is None
    with pytest.raises(ValueError, match="without a user or password"):
        CodingAgentConfig(base_url="https://user:pw@gateway.example/api")


@pytest.mark.django_db(transaction=True)
def test_a_gateway_refused_since_publish_starts_nothing(org, owner, scripted_model, coding, settings):
    anthropic, _ = coding
    settings.MODEL_ALLOWED_PRIVATE_HOSTS = ["127.0.0.1"]  # the operator allowed the gateway at publish…
    agent = coding_agent(org, owner, key=OPENAI_KEY, base_url=anthropic.url)
    settings.MODEL_ALLOWED_PRIVATE_HOSTS = []  # …and no longer does
    script, run, _ = turn_with_frames(scripted_model, org, owner, agent, [task("Create app/hello.py.")])

    assert run.status == RunStatus.COMPLETED
    assert "gateway (base_url) was refused" in script.results[0] and "Nothing was started" in script.results[0]
    assert anthropic.requests == [] and not SpendEntry.objects.filter(run=run, kind="coding_agent").exists()


@pytest.mark.django_db(transaction=True)
def test_without_a_shell_the_coding_agent_is_left_out_and_the_agent_knows_why(org, owner, scripted_model, coding,
                                                                              monkeypatch):
    # Publish refuses this binding now; a version frozen before that check existed still reaches the runner.
    monkeypatch.setattr(coding_publish, "coding_agent_problems", lambda *args: [])
    agent = coding_agent(org, owner, key=ANTHROPIC_KEY, sandbox={"backend": "state"})
    script, run = turn(scripted_model, org, owner, agent, [])
    assert run.status == RunStatus.COMPLETED
    assert "run_coding_agent" not in script.offered
    assert "harness has nowhere to run" in script.instructions[0]
    assert not Workspace.objects.filter(backend="service").exists()


@pytest.mark.django_db
def test_publishing_an_agent_runs_the_coding_agent_checks(org, owner):
    """The checks above are wired into publish itself: a key of the other provider is refused by name."""
    from agenticos.errors import Invalid

    openai = factories.secret(org, value=OPENAI_KEY)
    with pytest.raises(Invalid) as refused:
        publish(org, owner, capabilities=[
            {"id": "sandbox", "config": {"backend": "service"}},
            {"id": "coding_agent", "config": {"harness": "claude_code"}, "secret_id": str(openai.pk)},
        ])
    messages = json.dumps(refused.value.details)
    assert "Claude Code takes an Anthropic API key" in messages


@pytest.mark.django_db
def test_publish_refuses_the_coding_agent_on_a_daytona_connection_only(org, owner, outsider_org):
    """Daytona runs no background tasks, so the harness would fail at run time: publish says so by name."""
    from workspaces.models import SandboxConnection

    actor = actor_of(owner, org)
    anthropic = factories.secret(org, value=ANTHROPIC_KEY)
    daytona = SandboxConnection.objects.create(organization=org, name="Daytona", kind="daytona",
                                               url="https://app.daytona.io/api")
    sandboxd = SandboxConnection.objects.create(organization=org, name="Ours", url="http://sandboxd:8765")
    theirs = SandboxConnection.objects.create(organization=outsider_org, name="Daytona", kind="daytona",
                                              url="https://app.daytona.io/api")

    def problems(connection):
        data = {"capabilities": [
            {"id": "sandbox", "config": {"backend": "service", "connection_id": str(connection.pk)}},
            {"id": "coding_agent", "config": {}, "secret_id": str(anthropic.pk)}]}
        return [m["message"] for m in coding_publish.coding_agent_problems(actor, data, format_path)]

    assert any("Daytona sandbox connection cannot run" in m for m in problems(daytona))
    assert problems(sandboxd) == []
    assert problems(theirs) == []  # another organization's connection is the sandbox's own "no such" problem

"""Codex signed in with ChatGPT (issue 46 §4): the real Codex CLI (0.160.0, `make install`) in a real sandbox
(sandboxd, bubblewrap), its sign-in a `codex_chatgpt` secret — the auth.json `codex login` writes. Per task the
file sits in a CODEX_HOME of the task's own outside /workspace; Codex refreshes its expired access token at the
local fake's token endpoint (the fake revokes the refresh token it traded, as OpenAI does), speaks to the fake's
Responses API with the new token, and the file it rewrote is sealed again over the same secret, so the next task
signs in with it. The file is never where the agent's tools or the tenant's code look, nor in a frame, transcript,
result, log or workspace; another organization never reaches it; a run of no one who may see it never uses it."""

from __future__ import annotations

import json
import logging

import pytest

from agenticos import vault
from agenticos.models import AuditEvent, Secret
from agents.diff import format_path
from agents.models import Message, RunStatus, ToolCall
from capabilities.coding_agent import publish as coding_publish
from tests.fakes.openai_responses_sse import FakeResponsesSSE
from tests.fakes.openai_responses_sse import Turn as CodexTurn
from tests.runner.conftest import actor_of, publish
from tests.sandbox.sandboxd_server import needs_bwrap
from tests.sandbox.test_coding_agent import needs_clis, task, turn_with_frames
from tests.sandbox.test_sandbox_runs import turn
from workspaces.models import WorkspaceFile

pytestmark = [needs_bwrap, needs_clis]


@pytest.fixture(scope="module")
def chatgpt():
    fake = FakeResponsesSSE().start()
    yield fake
    fake.stop()


@pytest.fixture(scope="module")
def chatgpt_sandboxd(chatgpt):
    from tests.sandbox import sandboxd_server as server

    saved = dict(server.LIMITS)
    server.LIMITS.update({"SANDBOXD_EGRESS_ALLOW": f"127.0.0.1:{chatgpt.port}", "SANDBOXD_MEMORY_MB": "4096",
                          "SANDBOXD_MAX_PROCESSES": "512", "SANDBOXD_DISK_MB": "64", "SANDBOXD_CPU_SECONDS": "120"})
    try:
        running = server.start()
    finally:
        server.LIMITS.clear()
        server.LIMITS.update(saved)
    yield running
    server.stop(running)


@pytest.fixture
def signed_in(chatgpt, chatgpt_sandboxd, settings):
    chatgpt.script.clear()
    chatgpt.requests.clear()
    chatgpt.hold.set()
    settings.SANDBOXD_URL = chatgpt_sandboxd.url
    settings.SANDBOXD_TOKEN = ""
    settings.SANDBOXD_TOKEN_FILE = str(chatgpt_sandboxd.token_file)
    # The operator's address for the ChatGPT backend, as a proxy of theirs would be: Codex 0.160 runs its workspace
    # routing discovery (GET …/wham/accounts/check, an undocumented answer) only against chatgpt.com's own
    # /backend-api/codex path, which this fake does not imitate.
    settings.CODING_AGENT_CHATGPT_BASE_URL = f"http://127.0.0.1:{chatgpt.port}/v1"
    settings.CODING_AGENT_CHATGPT_TOKEN_URL = f"http://127.0.0.1:{chatgpt.port}/oauth/token"
    return chatgpt


def sign_in_secret(org, owner, value: str) -> Secret:
    from agenticos.services import create_secret

    return create_secret(actor=actor_of(owner, org), name="My ChatGPT", value=value, kind="codex_chatgpt")


def codex_agent(org, owner, secret, *, sandbox=None, extra=()):
    return publish(org, owner, capabilities=[
        {"id": "sandbox", "config": sandbox or {"backend": "service"}},
        {"id": "coding_agent", "config": {"harness": "codex"}, "secret_id": str(secret.pk)}, *extra])


def tokens_of(value: str) -> dict:
    return json.loads(value)["tokens"]


@pytest.mark.django_db(transaction=True)
def test_codex_signs_in_with_chatgpt_from_a_home_outside_the_workspace_and_its_refreshed_tokens_are_sealed_again(
        org, owner, scripted_model, signed_in, chatgpt_sandboxd, caplog):
    caplog.set_level(logging.DEBUG)
    fake = signed_in
    original = fake.sign_in("acct-7")
    first = tokens_of(original)
    secret = sign_in_secret(org, owner, original)
    agent = codex_agent(org, owner, secret, extra=[{"id": "code_execution", "config": {}}])
    fake.queue(CodexTurn.calls("exec_command", {"cmd": "printf 'y = 2\\n' > y.py"}), CodexTurn.says("Wrote y.py."))
    probe = ("import os\nprint('exists', os.path.exists('/home/task/auth.json'))\n"
             "print(sorted(os.listdir('/')))")
    script, run, frames = turn_with_frames(scripted_model, org, owner, agent, [
        task("Create y.py setting y to 2."),
        # The same run's own tools, afterwards, in the same workspace: the sign-in is nowhere they look.
        ("read_file", {"path": "/home/task/auth.json"}),
        ("execute", {"command": "cat /home/task/auth.json; ls -a /home; grep -rl refresh_token /workspace; "
                                "echo END", "timeout": 30}),
        ("run_python", {"code": probe}),
    ])

    assert run.status == RunStatus.COMPLETED, run.error
    result = script.results[0]
    assert "'status': 'completed'" in result and "Wrote y.py." in result
    assert bytes(WorkspaceFile.objects.get(path="/workspace/y.py").data) == b"y = 2\n"
    # Codex traded the expired sign-in's refresh token at the token endpoint, once…
    [refresh] = fake.refreshes()
    assert refresh.json["grant_type"] == "refresh_token" and refresh.json["refresh_token"] == first["refresh_token"]
    assert first["refresh_token"] not in fake.refresh  # …which revoked it…
    # …and spoke to the model API with the new access token, as the sign-in's account.
    sealed = vault.open_sealed(org.pk, *Secret.objects.values_list("key_version", "wrapped_key", "ciphertext")
                               .get(pk=secret.pk))
    second = tokens_of(sealed)
    assert second["refresh_token"] != first["refresh_token"] and second["refresh_token"] in fake.refresh
    scripted = fake.scripted()
    assert len(scripted) == 2
    assert {r.bearer for r in scripted} == {second["access_token"]}
    assert {r.headers.get("chatgpt-account-id") for r in scripted} == {"acct-7"}
    # The refreshed file is sealed over the same secret, audited as a refresh by this run (and used by it).
    refreshed = AuditEvent.objects.get(action="secret.refreshed", target_id=str(secret.pk))
    assert refreshed.details == {"kind": "codex_chatgpt", "run": str(run.pk)} and refreshed.actor_id == owner.pk
    assert AuditEvent.objects.filter(action="secret.used", target_id=str(secret.pk)).exists()
    assert Secret.objects.get(pk=secret.pk).hint == ""

    # The agent's own file tools, shell and run_python found nothing.
    read, shell, python = script.results[1:4]
    assert "refresh_token" not in read and "rt-acct-7" not in read
    assert "END" in shell and "No such file" in shell and "/workspace/" not in shell
    assert "exists False" in python
    # Nothing of the sign-in anywhere it could be read back: frames, transcript, tool calls, stored files, logs,
    # audit details, the sandbox's workspaces, and the task's home is gone.
    secrets = {first["refresh_token"], first["access_token"], second["refresh_token"], second["access_token"]}
    messages = json.dumps([m.parts for m in Message.objects.filter(run=run)])
    calls = json.dumps([[c.args, c.result] for c in ToolCall.objects.filter(run=run)], default=str)
    stored = b"".join(bytes(f.data) for f in WorkspaceFile.objects.all())
    audits = json.dumps(list(AuditEvent.objects.values_list("details", flat=True)))
    on_disk = b"".join(p.read_bytes() for p in (chatgpt_sandboxd.root / "workspaces").rglob("*")
                       if p.is_file() and not p.is_symlink())
    for value in secrets:
        for where, text in (("frames", json.dumps(frames)), ("messages", messages), ("tool calls", calls),
                            ("results", "".join(script.results)), ("logs", caplog.text), ("audit", audits),
                            ("run", str(run.error))):
            assert value not in text, where
        assert value.encode() not in stored and value.encode() not in on_disk
    assert not list((chatgpt_sandboxd.root / "tasks").glob("*/home"))

    # The chat's next task signs in with the resealed file: a live access token, so no refresh; its thread resumes.
    fake.requests.clear()
    fake.queue(CodexTurn.says("y is 2."))
    again, next_run = turn(scripted_model, org, owner, agent, [task("What is y?")], conversation=run.conversation)
    assert next_run.status == RunStatus.COMPLETED and "y is 2." in again.results[0]
    assert fake.refreshes() == []
    assert {r.bearer for r in fake.scripted()} == {second["access_token"]}
    assert "Create y.py setting y to 2." in str(fake.scripted()[0].json["input"])


@pytest.mark.django_db(transaction=True)
def test_a_stopped_or_timed_out_task_still_seals_what_codex_refreshed_and_leaves_no_home(org, owner, scripted_model,
                                                                                         signed_in, chatgpt_sandboxd):
    """Codex refreshed, then its model never answers: the task runs past its time. The refreshed file is sealed all
    the same (the old refresh token is revoked), and the home is gone."""
    import threading

    from agents.models import Run
    from agents.runs import request_stop
    from tests.runner.test_execute import run_now, start
    from tests.sandbox.helpers import ToolScript

    fake = signed_in
    original = fake.sign_in("acct-8")
    secret = sign_in_secret(org, owner, original)
    agent, version = codex_agent(org, owner, secret)
    fake.hold.clear()  # the model request waits until the person stops the run
    scripted_model(ToolScript([task("Refactor everything.")]).model())
    run = start(org, owner, agent, version, prompt="work")
    worker = threading.Thread(target=run_now, args=(run,))
    worker.start()
    import time
    deadline = time.monotonic() + 90
    while not fake.scripted():  # refreshed, and now waiting on its model
        assert time.monotonic() < deadline and worker.is_alive()
        time.sleep(0.2)
    request_stop(Run.objects.get(pk=run.pk))
    worker.join(90)
    fake.hold.set()

    run.refresh_from_db()
    assert run.status == RunStatus.CANCELLED
    sealed = vault.open_sealed(org.pk, *Secret.objects.values_list("key_version", "wrapped_key", "ciphertext")
                               .get(pk=secret.pk))
    assert tokens_of(sealed)["refresh_token"] != tokens_of(original)["refresh_token"]
    assert tokens_of(sealed)["refresh_token"] in fake.refresh
    assert AuditEvent.objects.filter(action="secret.refreshed", target_id=str(secret.pk)).exists()
    assert not list((chatgpt_sandboxd.root / "tasks").glob("*/home"))


@pytest.mark.django_db(transaction=True)
def test_a_sign_in_is_never_used_for_an_api_key_run_nor_in_a_sandbox_other_people_share(org, owner, scripted_model,
                                                                                        signed_in):
    from agents.runs import start_run
    from tests.runner.test_execute import run_now

    fake = signed_in
    original = fake.sign_in("acct-9")
    secret = sign_in_secret(org, owner, original)
    shared = codex_agent(org, owner, secret, sandbox={"backend": "service", "session_scope": "agent"})
    script, run = turn(scripted_model, org, owner, shared, [])
    assert run.status == RunStatus.COMPLETED
    assert "run_coding_agent" not in script.offered and "other people's tasks share" in script.instructions[0]

    agent, version = codex_agent(org, owner, secret)
    from agenticos.services import create_api_key
    from tests.sandbox.helpers import ToolScript

    key, _ = create_api_key(actor=actor_of(owner, org), name="ci", scope="run")
    via_key = ToolScript([])
    scripted_model(via_key.model())
    api_run = start_run(agent=agent, version=version, surface="api", prompt="work", user=owner, acting_role="owner",
                        api_key=key, enqueue=False)
    run_now(api_run)
    assert "run_coding_agent" not in via_key.offered and "API-key" in via_key.instructions[0]
    nobody = ToolScript([])
    scripted_model(nobody.model())
    system_run = start_run(agent=agent, version=version, surface="schedule", prompt="work", enqueue=False)
    run_now(system_run)
    assert "run_coding_agent" not in nobody.offered and "a person's subscription" in nobody.instructions[0]
    # Nothing reached the model API or the token endpoint, and the sign-in is as it was.
    assert fake.requests == []
    sealed = vault.open_sealed(org.pk, *Secret.objects.values_list("key_version", "wrapped_key", "ciphertext")
                               .get(pk=secret.pk))
    assert sealed == original


@pytest.mark.django_db
def test_publish_takes_a_sign_in_for_codex_only_and_never_another_organizations(org, owner, outsider_org,
                                                                                outsider):
    from agenticos.errors import Invalid

    login = FakeResponsesSSE().sign_in("acct-10")
    secret = sign_in_secret(org, owner, login)

    def problems(actor, config):
        data = {"capabilities": [{"id": "sandbox", "config": {"backend": "service"}},
                                 {"id": "coding_agent", "config": config, "secret_id": str(secret.pk)}]}
        return [p["message"] for p in coding_publish.coding_agent_problems(actor, data, format_path)]

    before = AuditEvent.objects.filter(action="secret.used").count()
    assert problems(actor_of(owner, org), {"harness": "codex"}) == []
    assert any("drives Codex only" in m for m in problems(actor_of(owner, org), {"harness": "claude_code"}))
    assert AuditEvent.objects.filter(action="secret.used").count() == before  # judged by its kind, never opened
    # Another organization naming this sign-in's id: "No such secret", the same as an id that does not exist.
    with pytest.raises(Invalid) as refused:
        publish(outsider_org, outsider, capabilities=[
            {"id": "sandbox", "config": {"backend": "service"}},
            {"id": "coding_agent", "config": {"harness": "codex"}, "secret_id": str(secret.pk)}])
    assert "No such secret in this organization." in json.dumps(refused.value.details)


@pytest.mark.django_db(transaction=True)
def test_a_task_a_lost_worker_left_running_is_stopped_on_resume_and_what_it_refreshed_is_sealed(org, owner, signed_in):
    """The worker died mid-task: the resumed run's on_interrupted hook stops the sandboxd task (its entry in Redis
    names the sign-in's id, never its value) and seals the file the task had rewritten."""
    import asyncio
    import time

    from agents.models import ToolCall
    from capabilities.coding_agent.capability import _remember, _stop_interrupted
    from tests.runner.test_execute import start
    from workspaces import connections

    fake = signed_in
    original = fake.sign_in("acct-11")
    renewed = fake.sign_in("acct-11", expired=False)  # what Codex would have written after refreshing
    secret = sign_in_secret(org, owner, original)
    agent, version = codex_agent(org, owner, secret)
    run = start(org, owner, agent, version, prompt="work")
    client = connections.client_for(connections.for_run(org, None))
    rewrite = f"printf '%s' '{renewed}' > /home/task/auth.json; echo REWROTE; while true; do sleep 0.1; done"

    async def begin() -> str:
        await client.open("lost-worker", "python")
        started = await client.start_task("lost-worker", rewrite, timeout=120, env={}, egress=[],
                                          home_files={"auth.json": original})
        deadline = time.monotonic() + 60
        while "REWROTE" not in (await client.task("lost-worker", started["id"]))["output"]:
            assert time.monotonic() < deadline
            await asyncio.sleep(0.2)
        return str(started["id"])

    task_id = asyncio.run(begin())
    _remember((str(run.pk), "call-lost"), None, "lost-worker", task_id, 120, str(secret.pk))
    call = ToolCall(run=run, tool_call_id="call-lost", tool_name="run_coding_agent")
    _stop_interrupted(run, [call])

    assert asyncio.run(client.task("lost-worker", task_id))["stopped"]
    sealed = vault.open_sealed(org.pk, *Secret.objects.values_list("key_version", "wrapped_key", "ciphertext")
                               .get(pk=secret.pk))
    assert sealed == renewed
    refreshed = AuditEvent.objects.get(action="secret.refreshed", target_id=str(secret.pk))
    assert refreshed.details["run"] == str(run.pk)

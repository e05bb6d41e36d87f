"""Backend service through the real runner and a real sandboxd (bubblewrap): `execute` offered, its files
kept like stored files, a skill's script run from /workspace/skills, and the isolation attacked from
`execute` — the host's /etc/shadow, a host file, writing outside the workspace, the test's own listening
port and any address, a fork bomb, filling the disk, outliving the timeout. Each attack fails, and the run
and the service stay up."""

from __future__ import annotations

import os
import socket
import threading
import time
import uuid
from pathlib import Path

import pytest

from agents.models import RunStatus
from knowledge.models import Skill, SkillFile
from tests.runner.conftest import publish
from tests.sandbox.sandboxd_server import needs_bwrap
from tests.sandbox.test_sandbox_runs import FILE_TOOLS, turn
from workspaces import store
from workspaces.models import SandboxConnection, Workspace, WorkspaceFile

pytestmark = [needs_bwrap, pytest.mark.django_db(transaction=True)]


def service(org, owner, **config):
    return publish(org, owner, capabilities=[{"id": "sandbox", "config": {"backend": "service", **config}}])


def execute(command: str, timeout: int = 20) -> tuple[str, dict]:
    return ("execute", {"command": command, "timeout": timeout})


def test_execute_is_offered_and_what_it_writes_is_kept_like_a_stored_file(org, owner, scripted_model, own_sandboxd,
                                                                          api_as):
    agent = service(org, owner)
    script, run = turn(scripted_model, org, owner, agent, [
        ("write_file", {"path": "data.csv", "content": "a,b\n1,2\n"}),
        execute("mkdir -p out && python3 -c \"import csv; rows = list(csv.reader(open('data.csv'))); "
                "open('out/summary.txt', 'w').write(str(len(rows)))\" && cat out/summary.txt"),
    ])
    assert run.status == RunStatus.COMPLETED
    assert script.offered == sorted([*FILE_TOOLS, "execute"])
    assert "execute runs a shell command" in script.instructions[0]
    assert script.results[1].rstrip().endswith("2")
    row = WorkspaceFile.objects.get(path="/workspace/out/summary.txt")
    assert bytes(row.data) == b"2" and str(row.created_by_run) == str(run.pk)
    assert [f.path for f in store.outputs(str(run.pk))] == ["/workspace/data.csv", "/workspace/out/summary.txt"]
    workspace = Workspace.objects.get(agent=agent[0])
    assert workspace.backend == "service"
    connection = SandboxConnection.objects.get(organization=org)
    assert connection.is_default and connection.is_deployment and workspace.key.startswith(f"{connection.pk}|")

    # The Files panel lists what the command wrote, and serves it.
    panel = api_as(owner, org).get(f"/api/v1/conversations/{run.conversation_id}/workspace")
    assert "/workspace/out/summary.txt" in [f["path"] for f in panel.json()["workspace"]["files"]]
    raw = api_as(owner, org).get(f"/api/v1/conversations/{run.conversation_id}/workspace/file",
                                 {"path": "/workspace/out/summary.txt"})
    assert raw.status_code == 200 and "2" in raw.content.decode()

    # The next turn of the chat finds the file, through the file tools and through the shell.
    again, _ = turn(scripted_model, org, owner, agent, [
        ("read_file", {"path": "out/summary.txt"}), execute("rm out/summary.txt && ls")],
        conversation=run.conversation)
    assert "2" in again.results[0]
    assert not WorkspaceFile.objects.filter(path="/workspace/out/summary.txt").exists()  # deleted by the command


def test_include_execute_off_removes_the_shell_on_a_service_workspace(org, owner, scripted_model, own_sandboxd):
    agent = service(org, owner, include_execute=False)
    script, _ = turn(scripted_model, org, owner, agent, [("ls", {})])
    assert script.offered == FILE_TOOLS


def test_a_skills_script_runs_from_its_folder(org, owner, scripted_model, own_sandboxd):
    skill = Skill.objects.create(organization=org, name="totals", description="Adds numbers.", body="Run the script.")
    SkillFile.objects.create(skill=skill, path="scripts/add.py",
                             content="import sys\nprint('total', sum(int(a) for a in sys.argv[1:]))\n")
    agent = publish(org, owner, capabilities=[{"id": "sandbox", "config": {"backend": "service"}}, {"id": "skills"}],
                    skill_ids=[str(skill.pk)])
    script, run = turn(scripted_model, org, owner, agent, [execute("python3 /workspace/skills/totals/scripts/add.py 2 3 4")])
    assert run.status == RunStatus.COMPLETED
    assert "total 9" in script.results[0]
    assert "scripts run from there with execute" in script.instructions[0]


def test_the_host_shadow_file_and_other_host_files_cannot_be_read(org, owner, scripted_model, own_sandboxd, tmp_path):
    host_file = tmp_path / f"host-secret-{uuid.uuid4().hex}.txt"
    host_file.write_text("HOST-ONLY-CONTENT")
    host_file.chmod(0o644)
    shadow = Path("/etc/shadow")
    shadow_line = shadow.read_text().splitlines()[0] if os.access(shadow, os.R_OK) else ""
    agent = service(org, owner)
    script, run = turn(scripted_model, org, owner, agent, [
        execute("cat /etc/shadow"),                   # named: refused before it runs (defence in depth)
        execute("d=etc; cat /$d/shadow; echo rc=$?"),  # spelled so no string check sees it: the jail answers
        execute(f"cat {host_file}; echo rc=$?"),
        execute("ls /home /root /work 2>&1; p=proc; cat /$p/1/environ | tr '\\0' ' '; echo"),
    ])
    named, spelled, host, around = script.results
    assert run.status == RunStatus.COMPLETED
    assert "Permission denied" in named and "/etc/shadow" in named
    assert "No such file" in spelled and "rc=1" in spelled
    assert "HOST-ONLY-CONTENT" not in host and "No such file" in host
    if shadow_line:
        assert all(shadow_line not in result for result in script.results)
    assert "VAULT_MASTER_KEY" not in around and "DATABASE_URL" not in around and "SANDBOXD" not in around


def test_nothing_outside_the_workspace_can_be_written(org, owner, scripted_model, own_sandboxd, tmp_path):
    target = tmp_path / f"pwned-{uuid.uuid4().hex}"
    agent = service(org, owner)
    script, _ = turn(scripted_model, org, owner, agent, [
        execute(f"u=usr; touch {target} /$u/pwned /pwned 2>&1; echo x > /workspace/../escape 2>&1; echo done"),
    ])
    out = script.results[0]
    assert "Read-only file system" in out or "No such file" in out
    assert not target.exists() and not Path("/usr/pwned").exists() and not Path("/pwned").exists()
    assert not (own_sandboxd.root / "workspaces" / "escape").exists()


def test_the_network_is_off_the_tests_own_port_and_any_address(org, owner, scripted_model, own_sandboxd):
    accepted: list[object] = []
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(5)
    listener.settimeout(0.2)
    port = listener.getsockname()[1]
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                continue
            accepted.append(conn)

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    probe = ("python3 -c \"import socket,sys\nfor h,p in [('127.0.0.1',%d),('10.0.0.1',80),('1.1.1.1',53),"
             "('169.254.169.254',80)]:\n  s=socket.socket(); s.settimeout(3)\n  print(h, s.connect_ex((h,p)))\"")
    try:
        agent = service(org, owner)
        script, run = turn(scripted_model, org, owner, agent, [execute(probe % port, timeout=30)])
    finally:
        stop.set()
        thread.join(timeout=2)
        listener.close()
    lines = dict(line.split() for line in script.results[0].splitlines() if line.count(" ") == 1)
    assert set(lines) == {"127.0.0.1", "10.0.0.1", "1.1.1.1", "169.254.169.254"}
    assert all(code != "0" for code in lines.values())  # none connected
    assert accepted == []  # the test's own port saw nobody
    assert run.status == RunStatus.COMPLETED


def test_a_fork_bomb_is_bounded_and_the_service_stays_up(org, owner, scripted_model, own_sandboxd):
    agent = service(org, owner)
    script, run = turn(scripted_model, org, owner, agent, [
        execute("bomb() { bomb | bomb & }; bomb; sleep 5", timeout=8),
        execute("echo alive"),
    ])
    assert run.status == RunStatus.COMPLETED
    assert "alive" in script.results[1]
    assert own_sandboxd.healthy()


def test_filling_the_disk_past_the_cap_fails_and_the_files_kept_stay_bounded(org, owner, scripted_model, own_sandboxd):
    agent = service(org, owner)
    script, run = turn(scripted_model, org, owner, agent, [
        execute("head -c 20000000 /dev/zero > one.bin; echo rc=$?; ls -l one.bin"),  # past one file's 4 MB
        execute("rm -f one.bin; for i in 1 2 3 4 5 6 7 8; do head -c 3000000 /dev/zero > f$i.bin; done; "
                "sleep 3; echo finished", timeout=20),  # 24 MB into an 8 MB workspace
        # The workspace is over its cap now; clearing it takes a moment and must not be killed for it.
        execute("sleep 1; rm -f f*.bin; echo cleared"),
    ])
    single, many, cleared = script.results
    assert run.status == RunStatus.COMPLETED
    assert "rc=153" in single or "File size limit exceeded" in single
    assert "4194304" in single  # the file stopped at the per-file cap
    assert "disk cap" in many or "File size limit exceeded" in many
    assert "finished" not in many or "File size limit exceeded" in many
    assert "cleared" in cleared
    assert own_sandboxd.healthy()


def test_a_command_and_its_children_do_not_outlive_the_timeout(org, owner, scripted_model, own_sandboxd):
    agent = service(org, owner, session_scope="agent")
    script, run = turn(scripted_model, org, owner, agent, [
        execute("(sleep 2; echo late > late.txt) & setsid sh -c 'sleep 2; echo late > late2.txt' & "
                "nohup sh -c 'sleep 2; echo late > late3.txt' >/dev/null 2>&1 & sleep 60", timeout=1),
    ])
    assert run.status == RunStatus.COMPLETED
    assert "timed out" in script.results[0]
    time.sleep(3.5)
    workspace = Workspace.objects.get(agent=agent[0])
    folder = own_sandboxd.root / "workspaces" / f"{org.pk.hex}-{workspace.pk.hex}"  # the organization's namespace
    assert folder.is_dir() and not list(folder.glob("late*.txt"))
    later, _ = turn(scripted_model, org, owner, agent, [execute("ls; echo listed")])
    assert "late" not in later.results[0] and "listed" in later.results[0]


def test_another_connection_starts_a_new_workspace_and_the_old_one_stays(org, owner, admin_user, scripted_model,
                                                                         own_sandboxd, settings):
    from tests import factories
    from tests.runner.conftest import actor_of
    from workspaces import connections

    agent = service(org, owner, session_scope="agent")
    turn(scripted_model, org, owner, agent, [execute("echo first > first.txt")])
    first = Workspace.objects.get(agent=agent[0])
    # A second registration of the same host is another installation as far as workspaces go; it is reached
    # through the outbound guard, so its loopback address must be listed.
    settings.SANDBOX_ALLOWED_PRIVATE_HOSTS = ["127.0.0.1"]
    second = connections.register(actor=actor_of(admin_user, org), name="Second", url=own_sandboxd.url,
                                  secret_id=str(factories.secret(org, value=own_sandboxd.token).pk),
                                  make_default=True)
    script, _ = turn(scripted_model, org, owner, agent, [execute("ls; echo listed")])
    assert "first.txt" not in script.results[0] and "listed" in script.results[0]
    assert Workspace.objects.filter(agent=agent[0]).count() == 2
    assert Workspace.objects.exclude(pk=first.pk).get(agent=agent[0]).key.startswith(f"{second.pk}|")
    assert WorkspaceFile.objects.filter(workspace=first, path="/workspace/first.txt").exists()  # still readable


def test_a_sandbox_service_that_does_not_answer_is_a_readable_result_and_files_still_work(
        org, owner, admin_user, scripted_model, own_sandboxd, settings):
    from tests import factories
    from tests.runner.conftest import actor_of
    from tests.sandbox.sandboxd_server import closed_port
    from workspaces import connections

    settings.SANDBOX_ALLOWED_PRIVATE_HOSTS = ["127.0.0.1"]
    with closed_port() as port:  # held for the whole turn: nothing can start answering on it
        connections.register(actor=actor_of(admin_user, org), name="Down", url=f"http://127.0.0.1:{port}",
                             secret_id=str(factories.secret(org, value="d" * 40).pk), make_default=True)
        agent = service(org, owner)
        script, run = turn(scripted_model, org, owner, agent, [
            execute("echo never"), ("write_file", {"path": "kept.md", "content": "still here"}),
            ("read_file", {"path": "kept.md"})])
    assert run.status == RunStatus.COMPLETED
    assert "sandbox service is unavailable" in script.results[0] and "could not be reached" in script.results[0]
    assert "never" not in script.results[0]
    assert "still here" in script.results[2]
    assert "d" * 40 not in " ".join(script.results)


def test_a_file_stored_mid_run_by_another_tool_reaches_the_sandbox_before_the_next_command(org, owner, own_sandboxd):
    """A generated image, speech or video clip lands in /workspace/output as a stored row, outside the backend;
    the sandbox copies the rows written since its last command before it runs the next one."""
    import asyncio

    from agenticos.models import Organization
    from agents.models import Run
    from workspaces import connections
    from workspaces.service import ServiceWorkspaceBackend

    agent, version = service(org, owner)
    run = Run.objects.create(organization=org, agent=agent, version=version, user=owner, surface="api",
                             status=RunStatus.RUNNING)
    connection = connections.for_run(Organization.objects.get(pk=org.pk), None)
    workspace = store.open_for_run(run, "agent", backend="service", host=str(connection.pk))
    backend = ServiceWorkspaceBackend(str(workspace.pk), run_id=str(run.pk), client=connections.client_for(connection))

    async def command(line: str) -> str:
        return (await backend.run(line, shell=True, timeout=20)).stdout  # noqa: S604 (the jailed shell is the point)

    assert asyncio.run(command("ls output 2>/dev/null; echo done")).strip() == "done"
    store.write(str(workspace.pk), "/workspace/output/speech.mp3", b"ID3 clip", run_id=str(run.pk))
    assert asyncio.run(command("cat output/speech.mp3")) == "ID3 clip"


def test_a_person_stopping_the_run_mid_command_kills_the_command_and_the_next_turn_finds_the_workspace_free(
        org, owner, scripted_model, own_sandboxd):
    """Stop during a long `execute`: the run ends cancelled and its command dies with it — before, sandboxd ran it
    on to its timeout holding the workspace, so the person's next message waited for it and saw what it did."""
    from agents.models import Run
    from agents.runs import request_stop
    from tests.runner.test_execute import run_now, start
    from tests.sandbox.helpers import ToolScript

    agent, version = service(org, owner, session_scope="agent")
    scripted_model(ToolScript([execute("echo go > started; sleep 25; echo late > late", timeout=60)]).model())
    run = start(org, owner, agent, version, prompt="work")
    worker = threading.Thread(target=run_now, args=(run,))
    worker.start()
    deadline = time.monotonic() + 60
    started: list[Path] = []
    while not started:
        assert time.monotonic() < deadline and worker.is_alive(), "the command never started"
        started = list((own_sandboxd.root / "workspaces").glob(f"{org.pk.hex}-*/started"))
        time.sleep(0.1)
    request_stop(Run.objects.get(pk=run.pk))
    worker.join(60)
    assert not worker.is_alive()
    run.refresh_from_db()
    assert run.status == RunStatus.CANCELLED

    later, _ = turn(scripted_model, org, owner, (agent, version), [execute("test -e late && echo lived-on || echo killed")])
    assert "killed" in later.results[0] and "lived-on" not in later.results[0]

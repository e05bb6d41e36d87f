"""A background task's private home (sandboxd/tasks.py `home_files`): the sign-in a coding CLI reads (Codex's
auth.json in its CODEX_HOME) lives outside /workspace, in a folder only that task's jail mounts, for as long as the
task runs. Nothing else reaches it — not a command or a file read of the same workspace, not another tenant's
workspace — and it is gone when the task ends, however it ends; what the task changed in it comes back once."""

from __future__ import annotations

import time
from pathlib import Path

import httpx
import pytest

from sandboxd import tokens
from tests.sandbox.sandboxd_server import needs_bwrap

pytestmark = needs_bwrap
SIGN_IN = '{"tokens": {"refresh_token": "rt-home-test-0f3a9c"}}'
MARKER = "rt-home-test-0f3a9c"
# Waits until the test drops `release` into the home, then rewrites the sign-in as a refreshing CLI would.
WAITING = ('test -f /home/task/auth.json && echo HAS-HOME; '
           'while [ ! -f /home/task/release ]; do sleep 0.1; done; '
           'printf \'{"tokens": {"refresh_token": "rt-refreshed"}}\' > /home/task/auth.json')


def _call(server, method: str, path: str, token: str, **kwargs) -> httpx.Response:
    return httpx.request(method, server.url + path, headers={"Authorization": f"Bearer {token}"}, timeout=60,
                         **kwargs)


def _open(server, token: str, workspace: str) -> None:
    answer = _call(server, "POST", "/v1/workspaces", token, json={"id": workspace, "runtime": "python"})
    assert answer.status_code in (200, 201), answer.text


def _start(server, token: str, workspace: str, command: str, *, timeout: float = 60,
           home_files: dict | None = None) -> httpx.Response:
    body: dict = {"command": command, "timeout": timeout}
    if home_files is not None:
        body["home_files"] = home_files
    return _call(server, "POST", f"/v1/workspaces/{workspace}/tasks", token, json=body)


def _wait(server, token: str, workspace: str, task_id: str, until) -> dict:
    deadline = time.monotonic() + 90
    while True:
        status = _call(server, "GET", f"/v1/workspaces/{workspace}/tasks/{task_id}", token).json()
        if until(status):
            return status
        assert time.monotonic() < deadline, status
        time.sleep(0.2)


def _home(server, task_id: str) -> Path:
    return server.root / "tasks" / task_id / "home"


def _holds_marker(folder: Path) -> bool:
    return any(MARKER.encode() in p.read_bytes() for p in folder.rglob("*") if p.is_file() and not p.is_symlink())


def test_only_the_task_sees_its_home_and_it_goes_with_the_task_handing_back_what_changed(sandboxd_server):
    server = sandboxd_server
    mine, theirs = tokens.derive(server.token, "orghomea"), tokens.derive(server.token, "orghomeb")
    _open(server, mine, "coding")
    _open(server, theirs, "coding")
    started = _start(server, mine, "coding", WAITING, home_files={"auth.json": SIGN_IN})
    assert started.status_code == 201, started.text
    task_id = started.json()["id"]
    assert "home_changed" in started.json() and started.json()["home_changed"] == {}
    _wait(server, mine, "coding", task_id, lambda s: "HAS-HOME" in s["output"])
    home = _home(server, task_id)
    assert (home / "auth.json").read_text() == SIGN_IN
    assert oct(home.stat().st_mode & 0o777) == "0o700"

    # While it runs: a command in the same workspace is refused (one thing at a time, and the file API waits for
    # the task's end likewise), and another tenant's jail has no such folder.
    busy = _call(server, "POST", "/v1/workspaces/coding/exec", mine, json={"command": "cat /home/task/auth.json"})
    assert busy.status_code == 409
    other = _call(server, "POST", "/v1/workspaces/coding/exec", theirs, json={
        "command": "cat /home/task/auth.json; ls -a /home; grep -rs rt-home /workspace /tmp; echo END"}).json()
    assert MARKER not in other["stdout"] + other["stderr"] and "END" in other["stdout"]
    assert "No such file" in other["stderr"]
    # Nor is it the other tenant's task to read.
    assert _call(server, "GET", f"/v1/workspaces/coding/tasks/{task_id}", theirs).status_code == 404

    (home / "release").write_text("")
    finished = _wait(server, mine, "coding", task_id, lambda s: s["state"] == "finished")
    assert finished["exit_code"] == 0
    assert finished["home_changed"] == {"auth.json": '{"tokens": {"refresh_token": "rt-refreshed"}}'}
    assert not home.exists()  # the folder went with the task
    assert not _holds_marker(server.root / "workspaces")  # and the sign-in never touched a workspace
    # After the task: the same workspace's file API reaches only /workspace…
    # (a path is read inside /workspace, a leading slash or not: no such file there; one climbing out is refused)
    for path, status in (("/home/task/auth.json", 404), ("home/task/auth.json", 404),
                         (f"../../tasks/{task_id}/home/auth.json", 400)):
        read = _call(server, "GET", "/v1/workspaces/coding/file", mine, params={"path": path})
        assert read.status_code == status and MARKER not in read.text, (path, read.text)
    listed = _call(server, "GET", "/v1/workspaces/coding/files", mine).json()["files"]
    assert all("auth.json" not in f["path"] for f in listed)
    # …and a command there finds nothing either.
    after = _call(server, "POST", "/v1/workspaces/coding/exec", mine, json={
        "command": "cat /home/task/auth.json; grep -rs rt-home /workspace; echo END"}).json()
    assert MARKER not in after["stdout"] + after["stderr"] and "No such file" in after["stderr"]


def test_a_stopped_task_and_a_timed_out_one_leave_no_home_and_a_link_left_in_it_brings_nothing_back(
        sandboxd_server):
    server = sandboxd_server
    token = tokens.derive(server.token, "orghomec")
    _open(server, token, "ends")
    forever = "echo UP; while true; do sleep 0.1; done"
    stopped = _start(server, token, "ends", forever, home_files={"auth.json": SIGN_IN}).json()
    _wait(server, token, "ends", stopped["id"], lambda s: "UP" in s["output"])
    answer = _call(server, "DELETE", f"/v1/workspaces/ends/tasks/{stopped['id']}", token).json()
    assert answer["stopped"] and answer["home_changed"] == {}
    assert not _home(server, stopped["id"]).exists()

    timed = _start(server, token, "ends", forever, timeout=2, home_files={"auth.json": SIGN_IN}).json()
    status = _wait(server, token, "ends", timed["id"], lambda s: s["state"] == "finished")
    assert status["timed_out"] and not _home(server, timed["id"]).exists()

    # A task that swaps its sign-in for a link to a host file gets nothing read through it on the host's behalf.
    linked = _start(server, token, "ends", "ln -sf /etc/passwd /home/task/auth.json.tmp && "
                    "mv -f /home/task/auth.json.tmp /home/task/auth.json",
                    home_files={"auth.json": SIGN_IN}).json()
    status = _wait(server, token, "ends", linked["id"], lambda s: s["state"] == "finished")
    assert status["exit_code"] == 0 and status["home_changed"] == {}
    assert not _home(server, linked["id"]).exists()


@pytest.mark.parametrize("files", [
    {"../auth.json": "x"}, {".hidden": "x"}, {"a/b": "x"}, {"auth.json": 3}, {"auth.json": "x" * (64 * 1024 + 1)},
    {f"f{i}": "x" for i in range(5)}, ["auth.json"],
])
def test_home_files_it_cannot_place_are_refused_and_nothing_starts(sandboxd_server, files):
    server = sandboxd_server
    token = tokens.derive(server.token, "orghomed")
    _open(server, token, "refused")
    before = set((server.root / "tasks").iterdir())
    answer = _start(server, token, "refused", "echo ran", home_files=files)
    assert answer.status_code == 400 and "home_files" in answer.json()["error"]["message"]
    assert set((server.root / "tasks").iterdir()) == before

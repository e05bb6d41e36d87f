"""Issue 37, finding 3: one organization's commands cannot use up, read or kill another's.

Each tenant's commands run as a host uid of its own (sandboxd/uids.py), so the kernel's per-user process quota is
counted per organization, and a workspace's folder is its owner's alone (0700). Before, every command ran as
`nobody`: org A holding its processes made org B's next command fail with "bwrap: Can't fork".
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

import httpx
import pytest

from sandboxd import tokens
from sandboxd.uids import Exhausted, UidMap
from tests.sandbox.sandboxd_server import LIMITS, needs_bwrap

pytestmark = needs_bwrap
root_only = pytest.mark.skipif(os.geteuid() != 0, reason="uids per tenant need sandboxd to run as root")


def _call(server, method: str, path: str, token: str, **kwargs) -> httpx.Response:
    return httpx.request(method, server.url + path, headers={"Authorization": f"Bearer {token}"}, timeout=90,
                         **kwargs)


def _tenants(server, *names: str) -> list[str]:
    return [tokens.derive(server.token, name) for name in names]


def _open(server, token: str, workspace_id: str) -> None:
    response = _call(server, "POST", "/v1/workspaces", token, json={"id": workspace_id, "runtime": "python"})
    assert response.status_code in (200, 201), response.text


def _exec(server, token: str, workspace_id: str, command: str, timeout: int = 30) -> dict:
    response = _call(server, "POST", f"/v1/workspaces/{workspace_id}/exec", token,
                     json={"command": command, "timeout": timeout})
    assert response.status_code == 200, response.text
    return response.json()


@root_only
def test_one_tenant_holding_its_whole_process_quota_does_not_stop_another_tenants_command(sandboxd_server):
    hog, victim = _tenants(sandboxd_server, "hogorg", "victimorg")
    _open(sandboxd_server, hog, "w")
    _open(sandboxd_server, victim, "w")
    quota = int(LIMITS["SANDBOXD_MAX_PROCESSES"])
    # The hog fills its quota with sleepers, says so, and holds them while the victim runs.
    # (bwrap outside, bwrap as the namespace's init and the shell are three more: the quota is all but full.)
    # They sleep for as long as sandboxd lets a command run (so a slow start on a loaded machine cannot see the
    # first ones wake before the last are forked); the test ends them when the victim has run.
    holding = f"i=0; while [ $i -lt {quota - 5} ]; do sleep 55 & i=$((i+1)); done; wait"
    hog_uid = os.stat(sandboxd_server.root / "workspaces" / "hogorg-w").st_uid
    held: dict = {}
    thread = threading.Thread(target=lambda: held.update(_exec(sandboxd_server, hog, "w", holding, timeout=60)))
    thread.start()
    try:
        # The hog's processes, counted on the host by its uid, until its quota is (nearly) all in use.
        running = 0
        for _ in range(450):
            running = sum(1 for pid in os.listdir("/proc") if pid.isdigit() and _uid_of(pid) == hog_uid)
            if running >= quota - 2:
                break
            threading.Event().wait(0.1)
        assert running >= quota - 2, (running, held)
        done = _exec(sandboxd_server, victim, "w", "sh -c 'echo forked' && echo ok")
        assert done["exit_code"] == 0, done
        assert done["stdout"] == "forked\nok\n" and "Can't fork" not in done["stderr"]
    finally:
        # The hog's sleepers have served: ended from the host (root), so its command returns now, not when
        # they would have woken. Only the hog's uid's `sleep` processes.
        _end_sleepers_of(hog_uid)
        thread.join(timeout=60)
    assert not thread.is_alive()


def _end_sleepers_of(uid: int) -> None:
    import signal

    for pid in os.listdir("/proc"):
        if not pid.isdigit() or _uid_of(pid) != uid:
            continue
        try:
            if Path(f"/proc/{pid}/comm").read_text().strip() == "sleep":
                os.kill(int(pid), signal.SIGKILL)
        except OSError:  # it ended meanwhile
            continue


def _uid_of(pid: str) -> int | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("Uid:"):
                return int(line.split()[1])
    except OSError:
        return None
    return None


@root_only
def test_each_tenants_workspace_is_its_own_uids_alone_and_a_second_workspace_shares_the_tenants_uid(sandboxd_server):
    first, second = _tenants(sandboxd_server, "ownera", "ownerb")
    _open(sandboxd_server, first, "one")
    _open(sandboxd_server, first, "two")
    _open(sandboxd_server, second, "one")
    workspaces = sandboxd_server.root / "workspaces"
    a1, a2, b1 = (os.stat(workspaces / name) for name in ("ownera-one", "ownera-two", "ownerb-one"))
    assert a1.st_uid == a2.st_uid != b1.st_uid
    assert {a1.st_uid, b1.st_uid}.isdisjoint({0, 65534})
    for info in (a1, b1):
        assert info.st_mode & 0o777 == 0o700
    assert os.stat(workspaces).st_mode & 0o777 == 0o711
    # What a command writes and what sandboxd writes for it belong to the tenant's uid.
    _exec(sandboxd_server, first, "one", "echo hi > made-inside")
    assert _call(sandboxd_server, "PUT", "/v1/workspaces/one/file", first, params={"path": "dir/put"},
                 content=b"x").status_code in (200, 201, 204)
    for path in ("made-inside", "dir", "dir/put"):
        assert os.stat(workspaces / "ownera-one" / path).st_uid == a1.st_uid, path
    # And inside, a command is told its uid is the sandbox's, never the host's.
    assert _exec(sandboxd_server, first, "one", "id -u")["stdout"] == "1000\n"


@root_only
def test_a_tenant_cannot_signal_another_tenants_command(sandboxd_server):
    sleeper, killer = _tenants(sandboxd_server, "sleeperorg", "killerorg")
    _open(sandboxd_server, sleeper, "w")
    _open(sandboxd_server, killer, "w")
    result: dict = {}
    thread = threading.Thread(target=lambda: result.update(
        _exec(sandboxd_server, sleeper, "w", "sleep 4; echo survived", timeout=30)))
    thread.start()
    try:
        threading.Event().wait(1.0)
        # Every signal it can send, to every pid it can name: only its own PID namespace answers.
        attack = _exec(sandboxd_server, killer, "w",
                       "kill -9 -1 2>/dev/null; for p in $(seq 2 400); do kill -9 $p 2>/dev/null; done; "
                       "ls /proc | grep -c '^[0-9]'")
        assert int(attack["stdout"].strip() or 0) < 10  # it sees its own few processes, nothing of the host
    finally:
        thread.join(timeout=60)
    assert result.get("exit_code") == 0 and result["stdout"] == "survived\n", result


def test_a_tenant_keeps_its_uid_across_restarts_and_no_uid_is_ever_given_twice(tmp_path):
    path = tmp_path / "uids.json"
    first = UidMap(path, 5000, 3)
    a, b = first.uid("tenant:a"), first.uid("tenant:b")
    assert a != b and {a, b} <= {5000, 5001, 5002}
    again = UidMap(path, 5000, 3)
    assert again.uid("tenant:a") == a and again.uid("tenant:b") == b
    c = again.uid("workspace:x")
    assert c not in (a, b)
    with pytest.raises(Exhausted):
        again.uid("tenant:d")

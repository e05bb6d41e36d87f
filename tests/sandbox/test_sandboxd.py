"""sandboxd over its own HTTP API (no platform in between): the token, the runtimes, the file API never
following a link a command planted, and the service outliving what its commands do."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from tests.sandbox.sandboxd_server import needs_bwrap

pytestmark = needs_bwrap


def _call(server, method: str, path: str, *, token: str | None = None, **kwargs) -> httpx.Response:
    headers = {} if token == "" else {"Authorization": f"Bearer {token or server.token}"}
    return httpx.request(method, server.url + path, headers=headers, timeout=60, **kwargs)


def test_every_route_refuses_a_missing_or_wrong_token_and_opens_nothing(sandboxd_server):
    for token in ("", "wrong-" + "x" * 40, sandboxd_server.token[:-1]):
        for method, path, body in [("GET", "/v1/runtimes", None), ("GET", "/v1/workspaces", None),
                                   ("POST", "/v1/workspaces", {"id": "intruder", "runtime": "python"}),
                                   ("POST", "/v1/workspaces/intruder/exec", {"command": "touch x"})]:
            response = _call(sandboxd_server, method, path, token=token, json=body)
            assert response.status_code == 401, (token, path)
            assert response.json() == {"error": {"code": "unauthorized",
                                                 "message": "A valid service token is required."}}
    ids = [w["id"] for w in _call(sandboxd_server, "GET", "/v1/workspaces").json()["workspaces"]]
    assert "intruder" not in ids
    assert not (sandboxd_server.root / "workspaces" / "intruder").exists()


def test_it_reports_the_runtimes_this_host_can_honour_and_refuses_others(sandboxd_server):
    aliases = [r["alias"] for r in _call(sandboxd_server, "GET", "/v1/runtimes").json()["runtimes"]]
    assert "python" in aliases
    refused = _call(sandboxd_server, "POST", "/v1/workspaces", json={"id": "w-bad", "runtime": "ubuntu:latest"})
    assert refused.status_code == 400 and "no runtime 'ubuntu:latest'" in refused.json()["error"]["message"]
    bad_id = _call(sandboxd_server, "POST", "/v1/workspaces", json={"id": "../etc", "runtime": "python"})
    assert bad_id.status_code == 400


def test_the_file_api_never_follows_a_link_a_command_planted(sandboxd_server):
    assert _call(sandboxd_server, "POST", "/v1/workspaces", json={"id": "links", "runtime": "python"}).status_code in (200, 201)
    done = _call(sandboxd_server, "POST", "/v1/workspaces/links/exec",
                 json={"command": "ln -s /etc/passwd passwd; ln -s / host; echo ok", "timeout": 20}).json()
    assert done["exit_code"] == 0 and "ok" in done["stdout"]
    for path in ("passwd", "host/etc/passwd", "host/etc/shadow", "../links.json"):
        response = _call(sandboxd_server, "GET", "/v1/workspaces/links/file", params={"path": path})
        assert response.status_code == 400, path
        assert "root:" not in response.text
    written = _call(sandboxd_server, "PUT", "/v1/workspaces/links/file", params={"path": "host/tmp/pwned"},
                    content=b"x")
    assert written.status_code == 400
    manifest = _call(sandboxd_server, "GET", "/v1/workspaces/links/files").json()["files"]
    assert manifest == []  # links are not files: nothing of the host is listed


def test_a_command_that_kills_everything_it_can_leaves_the_service_up(sandboxd_server):
    _call(sandboxd_server, "POST", "/v1/workspaces", json={"id": "killer", "runtime": "python"})
    done = _call(sandboxd_server, "POST", "/v1/workspaces/killer/exec",
                 json={"command": "kill -9 -1; kill -9 1; echo still", "timeout": 20}).json()
    assert "exit_code" in done
    assert sandboxd_server.healthy()
    again = _call(sandboxd_server, "POST", "/v1/workspaces/killer/exec", json={"command": "echo fine"}).json()
    assert again["stdout"] == "fine\n"
    closed = _call(sandboxd_server, "DELETE", "/v1/workspaces/killer")
    assert closed.status_code == 200 and not (sandboxd_server.root / "workspaces" / "killer").exists()
    assert _call(sandboxd_server, "POST", "/v1/workspaces/killer/exec", json={"command": "true"}).status_code == 404


@pytest.mark.parametrize("env", [{"PATH": "/tmp"}, {"LD_PRELOAD": "/workspace/x.so"}, {"lower": "x"}])
def test_a_caller_cannot_set_what_decides_what_runs(sandboxd_server, env):
    _call(sandboxd_server, "POST", "/v1/workspaces", json={"id": "envs", "runtime": "python"})
    refused = _call(sandboxd_server, "POST", "/v1/workspaces/envs/exec", json={"command": "env", "env": env})
    assert refused.status_code == 400


def test_a_tenant_token_reaches_only_its_own_workspaces_and_a_forged_one_nothing(sandboxd_server):
    from sandboxd.tokens import derive

    acme, other = derive(sandboxd_server.token, "acme"), derive(sandboxd_server.token, "other")
    assert _call(sandboxd_server, "POST", "/v1/workspaces", token=acme,
                 json={"id": "shared-name", "runtime": "python"}).status_code == 201
    _call(sandboxd_server, "POST", "/v1/workspaces/shared-name/exec", token=acme,
          json={"command": "echo acme-secret > notes.txt", "timeout": 20})
    # The same id under another tenant is another workspace; the first one cannot be named or listed.
    assert _call(sandboxd_server, "GET", "/v1/workspaces/shared-name", token=other).status_code == 404
    assert _call(sandboxd_server, "GET", "/v1/workspaces/acme-shared-name", token=other).status_code == 404
    assert _call(sandboxd_server, "GET", "/v1/workspaces/shared-name/file", token=other,
                 params={"path": "notes.txt"}).status_code == 404
    assert _call(sandboxd_server, "GET", "/v1/workspaces", token=other).json() == {"workspaces": []}
    [mine] = _call(sandboxd_server, "GET", "/v1/workspaces", token=acme).json()["workspaces"]
    assert mine["id"] == "shared-name"
    assert _call(sandboxd_server, "GET", "/v1/workspaces/shared-name/file", token=acme,
                 params={"path": "notes.txt"}).content == b"acme-secret\n"
    forged = "sbx1.acme." + "0" * 64
    assert _call(sandboxd_server, "GET", "/v1/workspaces", token=forged).status_code == 401
    assert _call(sandboxd_server, "GET", "/v1/workspaces", token=derive("not-the-service-token", "acme")
                 ).status_code == 401


def test_it_refuses_to_start_as_root_where_commands_could_not_reach_their_workspace(tmp_path):
    import os
    import subprocess
    import sys

    if os.geteuid() != 0:
        pytest.skip("only root starts commands as another uid")
    hidden = tmp_path / "private"
    hidden.mkdir(mode=0o700)
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "SANDBOXD_TOKEN": "s" * 40,
           "SANDBOXD_ROOT": str(hidden / "root"), "SANDBOXD_PORT": "1"}
    done = subprocess.run([sys.executable, "-m", "sandboxd"], env=env, capture_output=True, text=True, timeout=60,
                          cwd=str(Path(__file__).resolve().parents[2]))
    assert done.returncode == 2 and "is not searchable by other users" in done.stderr


def test_make_run_starts_sandboxd_where_bubblewrap_isolates_on_the_url_it_names(monkeypatch):
    from config import launcher

    monkeypatch.setenv("SANDBOXD_URL", "http://127.0.0.1:9876")
    launcher.sandboxd_command.cache_clear()
    try:
        assert launcher.commands(8000)["sandbox"][-2:] == ["-m", "sandboxd"]
        env = launcher.sandboxd_env()
        assert (env["SANDBOXD_HOST"], env["SANDBOXD_PORT"]) == ("127.0.0.1", "9876")
        assert env["SANDBOXD_TOKEN_FILE"].endswith("sandboxd.token")
        monkeypatch.setenv("SANDBOXD_BWRAP", "/nonexistent/bwrap")  # what --check reports on a machine without it
        launcher.sandboxd_command.cache_clear()
        assert "sandbox" not in launcher.commands(8000)
    finally:
        launcher.sandboxd_command.cache_clear()


def test_a_name_lookup_in_a_jail_gives_up_after_one_short_try(sandboxd_server):
    """No name server is reachable from a jail; its resolver is told to try once for a second, the least musl
    takes (an empty file left musl programs such as Codex's binary waiting 10 s on every name)."""
    assert _call(sandboxd_server, "POST", "/v1/workspaces", json={"id": "names", "runtime": "python"}).status_code in (200, 201)
    done = _call(sandboxd_server, "POST", "/v1/workspaces/names/exec", json={
        "command": "cat /etc/resolv.conf; python3 -c \"import socket\ntry:\n socket.getaddrinfo('example.com', 443)\n"
                   "except OSError as e: print('refused', type(e).__name__)\"", "timeout": 30}).json()
    assert done["exit_code"] == 0, done
    assert done["stdout"].splitlines()[0] == "options timeout:1 attempts:1"
    assert "refused gaierror" in done["stdout"]


def test_a_command_whose_caller_hangs_up_is_killed_and_frees_the_workspace(sandboxd_server):
    """An agent's run stopped mid-command drops its request: the command dies with it, instead of running to its
    timeout holding the workspace's lock (the next command of that workspace — the person's next message —
    would wait for it, and see what it went on to do)."""
    import json
    import socket
    import time
    from urllib.parse import urlsplit

    assert _call(sandboxd_server, "POST", "/v1/workspaces", json={"id": "hangup", "runtime": "python"}).status_code == 201
    body = json.dumps({"command": "echo go > started; sleep 20; echo late > late", "timeout": 60}).encode()
    address = urlsplit(sandboxd_server.url)
    caller = socket.create_connection((address.hostname, address.port), timeout=30)
    caller.sendall(b"POST /v1/workspaces/hangup/exec HTTP/1.1\r\nHost: sandboxd\r\n"
                   + f"Authorization: Bearer {sandboxd_server.token}\r\nContent-Type: application/json\r\n".encode()
                   + f"Content-Length: {len(body)}\r\n\r\n".encode() + body)
    # Looked for on the host: the file API waits for the workspace the command holds.
    started = sandboxd_server.root / "workspaces" / "hangup" / "started"
    deadline = time.monotonic() + 60
    while not started.exists():
        assert time.monotonic() < deadline, "the command never started"
        time.sleep(0.05)
    caller.close()  # the caller hangs up while the command sleeps

    # Had the command lived on, this one would wait for the workspace until it ended, and find what it wrote last.
    after = _call(sandboxd_server, "POST", "/v1/workspaces/hangup/exec",
                  json={"command": "test -e late && echo lived-on || echo killed", "timeout": 60}).json()
    assert after["stdout"].strip() == "killed", after

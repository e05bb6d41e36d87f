"""The platform's client of a Daytona endpoint, offering a `service` workspace what a sandboxd offers.

Daytona's REST API (the connection's URL is its API base, e.g. https://app.daytona.io/api; the token is an
API key sent as a Bearer token):
    POST   /sandbox                                     {labels, snapshot?} → a sandbox {id, state, ...}
    GET    /sandbox?labels=<json>                       the sandboxes carrying those labels
    GET    /sandbox/{id}  · POST /sandbox/{id}/start · DELETE /sandbox/{id}
    GET    /snapshots                                   the snapshots a sandbox can start from (our runtimes)
    GET    /sandbox/{id}/toolbox-proxy-url              {url}: the sandbox's toolbox is at <url>/{id}
    and on that toolbox (an older API serves it at <api>/toolbox/{id}/toolbox, used when the above is a 404):
    POST   /process/execute                             {command, cwd, timeout} → {exitCode, result}
    GET    /files/download?path=   POST /files/upload?path= (multipart `file`)
    DELETE /files?path=            POST /files/folder?path=&mode=
A workspace is one Daytona sandbox labelled `agenticos-workspace=<id>`; its files live under WORKDIR.

Daytona runs a command's argv without a shell and answers stdout and stderr combined, so a command goes in as
`sh -c <script>`, bounded by coreutils `timeout` (exit 124 = timed out), and what it changed is found by
hashing the workspace before and after (sandboxd reports that itself). Environment variables travel in a file
uploaded beside the workspace and removed by the script, never on the command line Daytona logs. Background
tasks (the coding agent) are sandboxd's alone: they are refused here by name.

Every request goes through the outbound guard like a registered sandboxd's (SANDBOX_ALLOWED_PRIVATE_HOSTS),
the toolbox proxy's address (Daytona's answer, so another host) included. That is why this speaks the REST API
with the guard's httpx client instead of using the `daytona` SDK (the one pydantic-ai-harness's Daytona sandbox
wraps): the SDK's generated clients open their own connections, which the guard's resolving transport cannot
sit under.
"""

from __future__ import annotations

import asyncio
import json
import math
import posixpath
import secrets
import shlex
import time
from dataclasses import dataclass, field
from typing import Any

from workspaces.client import SandboxdClient, SandboxdError

DEFAULT_URL = "https://app.daytona.io/api"
HOME = "/home/daytona"
WORKDIR = f"{HOME}/workspace"
LABEL = "agenticos-workspace"
START_WAIT_SECONDS = 60.0
TIMED_OUT = 124  # coreutils `timeout`
HASH_SCRIPT = "find . -type f -print0 | xargs -0 -r sha256sum"
NO_TASKS = ("A Daytona connection runs no background tasks (the coding agent needs this deployment's sandbox "
            "service or another sandboxd).")


def _rel(path: str) -> str:
    """A workspace-relative path, refused when it would leave the workspace."""
    clean = posixpath.normpath("/" + str(path)).lstrip("/")
    if not clean or ".." in str(path).split("/"):
        raise SandboxdError(f"{path!r} is not a path inside the workspace.", status=400)
    return clean


def _listed(body: Any) -> list[dict[str, Any]]:
    items = body.get("items") if isinstance(body, dict) else body
    return [item for item in items or [] if isinstance(item, dict)]


def _parse_hashes(output: str) -> dict[str, str]:
    found: dict[str, str] = {}
    for line in output.splitlines():
        digest, _, name = line.partition("  ")
        if len(digest) == 64 and name.startswith("./"):
            found[name[2:]] = digest
    return found


@dataclass
class DaytonaClient(SandboxdClient):
    """Same methods as SandboxdClient where a service workspace uses them; errors are SandboxdError too, so
    the backend and the console handle both alike. Always guarded: a Daytona URL is a tenant's value."""

    guarded: bool = True
    _ids: dict[str, str] = field(default_factory=dict, repr=False)
    _toolboxes: dict[str, SandboxdClient] = field(default_factory=dict, repr=False)

    async def _toolbox(self, sandbox_id: str, sandbox: dict[str, Any] | None = None) -> SandboxdClient:
        """The sandbox's toolbox: at the proxy Daytona names for it, or on the API itself (older servers)."""
        if sandbox_id not in self._toolboxes:
            proxy = str((sandbox or {}).get("toolboxProxyUrl") or "")
            if not proxy:
                try:
                    answer = (await self._request("GET", f"/sandbox/{sandbox_id}/toolbox-proxy-url")).json()
                    proxy = str(answer.get("url") or "") if isinstance(answer, dict) else ""
                except SandboxdError as exc:
                    if exc.status != 404:
                        raise
            base = (f"{proxy.rstrip('/')}/{sandbox_id}" if proxy
                    else f"{self.base_url.rstrip('/')}/toolbox/{sandbox_id}/toolbox")
            self._toolboxes[sandbox_id] = SandboxdClient(base, self.token, guarded=True)
        return self._toolboxes[sandbox_id]

    async def _tool(self, sandbox_id: str, method: str, path: str, **kwargs: Any) -> Any:
        return await (await self._toolbox(sandbox_id))._request(method, path, **kwargs)

    # ------------------------------------------------------------------ sandboxes

    async def _find(self, workspace_id: str) -> dict[str, Any] | None:
        labels = json.dumps({LABEL: workspace_id})
        found = _listed((await self._request("GET", "/sandbox", params={"labels": labels})).json())
        return next((s for s in found if (s.get("labels") or {}).get(LABEL) == workspace_id), None)

    async def _sandbox_id(self, workspace_id: str) -> str:
        if workspace_id not in self._ids:
            found = await self._find(workspace_id)
            if found is None:
                raise SandboxdError("That workspace is not open on the Daytona endpoint.", status=404)
            self._ids[workspace_id] = str(found["id"])
        return self._ids[workspace_id]

    async def _started(self, sandbox: dict[str, Any]) -> None:
        sandbox_id = str(sandbox["id"])
        if sandbox.get("state") in ("stopped", "archived"):
            await self._request("POST", f"/sandbox/{sandbox_id}/start")
        deadline = time.monotonic() + START_WAIT_SECONDS
        while sandbox.get("state") != "started":
            if sandbox.get("state") in ("error", "build_failed", "destroyed", "destroying"):
                raise SandboxdError(f"The Daytona sandbox could not start ({sandbox.get('state')}).", status=502)
            if time.monotonic() > deadline:
                raise SandboxdError("The Daytona sandbox did not start in time.", status=504)
            await asyncio.sleep(1.0)
            sandbox = dict((await self._request("GET", f"/sandbox/{sandbox_id}")).json())

    async def open(self, workspace_id: str, runtime: str | None) -> dict[str, Any]:
        sandbox = await self._find(workspace_id)
        created = sandbox is None
        if sandbox is None:
            body: dict[str, Any] = {"labels": {LABEL: workspace_id}, **({"snapshot": runtime} if runtime else {})}
            sandbox = dict((await self._request("POST", "/sandbox", json=body)).json())
        await self._started(sandbox)
        sandbox_id = self._ids[workspace_id] = str(sandbox["id"])
        await self._toolbox(sandbox_id, sandbox)
        await self._tool(sandbox_id, "POST", "/files/folder", params={"path": WORKDIR, "mode": "755"})
        return {"id": workspace_id, "runtime": sandbox.get("snapshot") or runtime, "created": created}

    async def close(self, workspace_id: str) -> None:
        sandbox_id = await self._sandbox_id(workspace_id)
        await self._request("DELETE", f"/sandbox/{sandbox_id}")
        self._ids.pop(workspace_id, None)
        self._toolboxes.pop(sandbox_id, None)

    # ------------------------------------------------------------------ commands

    async def _exec(self, sandbox_id: str, script: str, *, timeout: float) -> dict[str, Any]:
        response = await self._tool(sandbox_id, "POST", "/process/execute", json={"command": f"sh -c {shlex.quote(script)}", "cwd": WORKDIR,
                                                                     "timeout": math.ceil(timeout) + 5},
                                    timeout=timeout + 20)
        return dict(response.json())

    async def _hashes(self, sandbox_id: str) -> dict[str, str]:
        answer = await self._exec(sandbox_id, HASH_SCRIPT, timeout=60)
        return _parse_hashes(str(answer.get("result") or ""))

    async def execute(self, workspace_id: str, command: str, *, timeout: float,
                      env: dict[str, str] | None = None) -> dict[str, Any]:
        sandbox_id = await self._sandbox_id(workspace_id)
        before = await self._hashes(sandbox_id)
        seconds = max(1, math.ceil(timeout))
        script = f"exec timeout -k 2 {seconds} sh -c {shlex.quote(command)}"
        if env:
            name = f"../.agenticos-env-{secrets.token_hex(8)}"
            lines = "".join(f"export {k}={shlex.quote(v)}\n" for k, v in env.items() if k.isidentifier())
            await self._upload(sandbox_id, f"{HOME}/{name[3:]}", lines.encode())
            script = f". {name} && rm -f {name} && {script}"
        answer = await self._exec(sandbox_id, script, timeout=timeout)
        after = await self._hashes(sandbox_id)
        exit_code = int(answer.get("exitCode", 1))
        return {"exit_code": exit_code, "stdout": str(answer.get("result") or ""), "stderr": "",
                "timed_out": exit_code == TIMED_OUT,
                "changed": sorted(p for p, digest in after.items() if before.get(p) != digest),
                "deleted": sorted(p for p in before if p not in after)}

    async def start_task(self, workspace_id: str, command: str, *, timeout: float, env: dict[str, str],
                         egress: list[str], home_files: dict[str, str] | None = None) -> dict[str, Any]:
        raise SandboxdError(NO_TASKS, status=501, code="unsupported")

    async def task(self, workspace_id: str, task_id: str, *, offset: int = 0) -> dict[str, Any]:
        raise SandboxdError(NO_TASKS, status=501, code="unsupported")

    async def stop_task(self, workspace_id: str, task_id: str, *, offset: int = 0) -> dict[str, Any]:
        raise SandboxdError(NO_TASKS, status=501, code="unsupported")

    # ------------------------------------------------------------------ files

    async def files(self, workspace_id: str, *, with_hash: bool = False) -> list[dict[str, Any]]:
        hashes = await self._hashes(await self._sandbox_id(workspace_id))
        return [{"path": path, **({"sha256": digest} if with_hash else {})} for path, digest in sorted(hashes.items())]

    async def _upload(self, sandbox_id: str, path: str, data: bytes) -> None:
        await self._tool(sandbox_id, "POST", "/files/upload", params={"path": path},
                         files={"file": (posixpath.basename(path), data, "application/octet-stream")})

    async def read(self, workspace_id: str, path: str) -> bytes:
        sandbox_id = await self._sandbox_id(workspace_id)
        response = await self._tool(sandbox_id, "GET", "/files/download", params={"path": f"{WORKDIR}/{_rel(path)}"})
        return response.content

    async def write(self, workspace_id: str, path: str, data: bytes) -> None:
        sandbox_id, rel = await self._sandbox_id(workspace_id), _rel(path)
        parent = posixpath.dirname(rel)
        if parent:
            await self._tool(sandbox_id, "POST", "/files/folder", params={"path": f"{WORKDIR}/{parent}", "mode": "755"})
        await self._upload(sandbox_id, f"{WORKDIR}/{rel}", data)

    async def remove(self, workspace_id: str, path: str) -> None:
        sandbox_id = await self._sandbox_id(workspace_id)
        await self._tool(sandbox_id, "DELETE", "/files", params={"path": f"{WORKDIR}/{_rel(path)}"})

    # ------------------------------------------------------------------ what the console and the Builder read

    async def runtimes(self, *, timeout: float = 30.0) -> list[dict[str, str]]:
        """Daytona's active snapshots: a runtime here is the snapshot a sandbox starts from."""
        found = _listed((await self._request("GET", "/snapshots", timeout=timeout)).json())
        return [{"alias": str(s.get("name")), "description": str(s.get("imageName") or "")}
                for s in found if s.get("name") and s.get("state", "active") == "active"]

    @staticmethod
    def _as_workspace(sandbox: dict[str, Any]) -> dict[str, Any]:
        memory_gb = sandbox.get("memory") or 0
        return {"id": (sandbox.get("labels") or {}).get(LABEL), "runtime": sandbox.get("snapshot"),
                "state": sandbox.get("state"), "idle_seconds": None, "running": 0,
                "memory_kb": int(float(memory_gb) * 1024 * 1024), "activity": []}

    async def workspaces(self) -> list[dict[str, Any]]:
        found = _listed((await self._request("GET", "/sandbox")).json())
        return [self._as_workspace(s) for s in found if (s.get("labels") or {}).get(LABEL)]

    async def workspace(self, workspace_id: str) -> dict[str, Any]:
        found = await self._find(workspace_id)
        if found is None:
            raise SandboxdError("That workspace is not open on the Daytona endpoint.", status=404)
        return self._as_workspace(found)

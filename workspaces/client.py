"""The platform's client of a sandboxd (sandboxd/app.py documents the wire).

Every request of a registered connection goes through the outbound guard (`netguard.PinnedTransport`,
allowance SANDBOX_ALLOWED_PRIVATE_HOSTS): the address is checked and pinned on each request and the token
never follows a redirect. The deployment's own sandboxd is the one exception: its address is the
operator's SANDBOXD_URL (loopback in `make run`), never a tenant's value, so it is reached directly.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import httpx2
from asgiref.sync import async_to_sync

from agenticos import netguard

SANDBOX_HOSTS = "SANDBOX_ALLOWED_PRIVATE_HOSTS"
REQUEST_TIMEOUT = 30.0
# Added to a command's own timeout for the request carrying it: sandboxd reports the timeout, not us.
EXEC_SLACK_SECONDS = 15.0


class SandboxdError(Exception):
    """sandboxd could not be reached or answered with an error; `status` is its HTTP status (0: no answer).
    The message never carries the token or the request's headers."""

    def __init__(self, message: str, *, status: int = 0, code: str = "") -> None:
        super().__init__(message)
        self.status = status
        self.code = code


@dataclass
class SandboxdClient:
    base_url: str
    token: str = field(repr=False)
    guarded: bool = True

    def _client(self, timeout: float) -> httpx2.AsyncClient:
        transport: httpx2.AsyncBaseTransport
        if self.guarded:
            transport = netguard.PinnedTransport(allowance=SANDBOX_HOSTS, home=self.base_url)
        else:
            transport = httpx2.AsyncHTTPTransport(trust_env=False)
        return httpx2.AsyncClient(base_url=self.base_url.rstrip("/"), transport=transport, trust_env=False,
                                  timeout=httpx2.Timeout(timeout, connect=min(timeout, 5.0)),
                                  follow_redirects=False, headers={"Authorization": f"Bearer {self.token}"})

    async def _request(self, method: str, path: str, *, timeout: float = REQUEST_TIMEOUT,
                       **kwargs: Any) -> httpx2.Response:
        try:
            async with self._client(timeout) as client:
                response = await client.request(method, path, **kwargs)
        except netguard.Refused as exc:
            raise SandboxdError(f"The sandbox service's address was refused: {exc}") from None
        except httpx2.TimeoutException:
            raise SandboxdError("The sandbox service did not answer in time.") from None
        except httpx2.HTTPError as exc:
            refusal = netguard.refusal_in(exc)
            if refusal is not None:
                raise SandboxdError(f"The sandbox service's address was refused: {refusal}") from None
            raise SandboxdError(f"The sandbox service could not be reached ({type(exc).__name__}).") from None
        if response.status_code >= 400:
            message, code = f"The sandbox service answered {response.status_code}.", ""
            try:
                error = response.json().get("error") or {}
                message, code = str(error.get("message") or message)[:500], str(error.get("code") or "")
            except (ValueError, AttributeError):
                pass
            raise SandboxdError(message, status=response.status_code, code=code)
        return response

    # ------------------------------------------------------------------ async API

    async def runtimes(self, *, timeout: float = REQUEST_TIMEOUT) -> list[dict[str, str]]:
        return list((await self._request("GET", "/v1/runtimes", timeout=timeout)).json().get("runtimes") or [])

    async def workspaces(self) -> list[dict[str, Any]]:
        return list((await self._request("GET", "/v1/workspaces")).json().get("workspaces") or [])

    async def workspace(self, workspace_id: str) -> dict[str, Any]:
        return dict((await self._request("GET", f"/v1/workspaces/{workspace_id}")).json())

    async def open(self, workspace_id: str, runtime: str | None) -> dict[str, Any]:
        body = {"id": workspace_id, **({"runtime": runtime} if runtime else {})}
        return dict((await self._request("POST", "/v1/workspaces", json=body)).json())

    async def close(self, workspace_id: str) -> None:
        await self._request("DELETE", f"/v1/workspaces/{workspace_id}")

    async def execute(self, workspace_id: str, command: str, *, timeout: float,
                      env: dict[str, str] | None = None) -> dict[str, Any]:
        response = await self._request("POST", f"/v1/workspaces/{workspace_id}/exec",
                                       json={"command": command, "timeout": timeout, "env": env or {}},
                                       timeout=timeout + EXEC_SLACK_SECONDS)
        return dict(response.json())

    # Background tasks (sandboxd/tasks.py): started, read from an offset while they run, stopped.

    async def start_task(self, workspace_id: str, command: str, *, timeout: float, env: dict[str, str],
                         egress: list[str], home_files: dict[str, str] | None = None) -> dict[str, Any]:
        """`home_files`: the task's private home outside /workspace (sandboxd/tasks.py), seeded with these files;
        the finished task's state answers those it changed (`home_changed`)."""
        body: dict[str, Any] = {"command": command, "timeout": timeout, "env": env, "egress": egress}
        if home_files is not None:
            body["home_files"] = home_files
        response = await self._request("POST", f"/v1/workspaces/{workspace_id}/tasks", json=body)
        return dict(response.json())

    async def task(self, workspace_id: str, task_id: str, *, offset: int = 0) -> dict[str, Any]:
        response = await self._request("GET", f"/v1/workspaces/{workspace_id}/tasks/{task_id}",
                                       params={"offset": str(offset)})
        return dict(response.json())

    async def stop_task(self, workspace_id: str, task_id: str, *, offset: int = 0) -> dict[str, Any]:
        response = await self._request("DELETE", f"/v1/workspaces/{workspace_id}/tasks/{task_id}",
                                       params={"offset": str(offset)})
        return dict(response.json())

    async def files(self, workspace_id: str, *, with_hash: bool = False) -> list[dict[str, Any]]:
        response = await self._request("GET", f"/v1/workspaces/{workspace_id}/files",
                                       params={"hash": "1" if with_hash else "0"})
        return list(response.json().get("files") or [])

    async def read(self, workspace_id: str, path: str) -> bytes:
        return (await self._request("GET", f"/v1/workspaces/{workspace_id}/file", params={"path": path})).content

    async def write(self, workspace_id: str, path: str, data: bytes) -> None:
        await self._request("PUT", f"/v1/workspaces/{workspace_id}/file", params={"path": path}, content=data)

    async def remove(self, workspace_id: str, path: str) -> None:
        await self._request("DELETE", f"/v1/workspaces/{workspace_id}/file", params={"path": path})

    # ------------------------------------------------------------------ for synchronous callers (views)

    def runtimes_sync(self, *, timeout: float = REQUEST_TIMEOUT) -> list[dict[str, str]]:
        return async_to_sync(self.runtimes)(timeout=timeout)

    def workspaces_sync(self) -> list[dict[str, Any]]:
        return async_to_sync(self.workspaces)()

    def workspace_sync(self, workspace_id: str) -> dict[str, Any]:
        return async_to_sync(self.workspace)(workspace_id)

"""sandboxd's HTTP API (Starlette). Every /v1/ route needs `Authorization: Bearer <token>`: the service
token (every workspace) or a tenant token derived from it (tokens.py: that tenant's workspaces only, in a
namespace of their own). Every answer is JSON, errors as {"error": {"code", "message"}}.

    GET    /healthz                               liveness, no token (says nothing about workspaces)
    GET    /v1/runtimes                           the runtime aliases this host honours
    GET    /v1/workspaces                         open workspaces: runtime, idle time, memory of the last command
    POST   /v1/workspaces                         {id, runtime} → open (or re-attach to) a workspace
    GET    /v1/workspaces/{id}                    one workspace with its activity log
    DELETE /v1/workspaces/{id}                    close it: its files go
    POST   /v1/workspaces/{id}/exec               {command, timeout, env} → exit code, capped output, changes
    POST   /v1/workspaces/{id}/tasks              {command, timeout, env, egress, home_files} → a background task
                                                  (tasks.py; home_files: the task's private home outside /workspace)
    GET    /v1/workspaces/{id}/tasks/{task}?offset=   its state, its stdout from offset, changes once finished
    DELETE /v1/workspaces/{id}/tasks/{task}       stop it (its whole process group) and answer its state
    GET    /v1/workspaces/{id}/files?hash=1       every regular file: path, size, mtime (sha256)
    GET    /v1/workspaces/{id}/file?path=         the file's bytes
    PUT    /v1/workspaces/{id}/file?path=         write the request body there
    DELETE /v1/workspaces/{id}/file?path=         remove a file or folder
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import shutil
import threading
from collections.abc import AsyncIterator
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from sandboxd import jail, tokens
from sandboxd.config import Config
from sandboxd.egress import EgressRefused, parse
from sandboxd.tasks import Busy, Tasks
from sandboxd.workspaces import ID_PATTERN, Full, NotFound, Refused, Registry, changes

log = logging.getLogger("sandboxd")
ENV_NAME = re.compile(r"^[A-Z_][A-Z0-9_]{0,63}$")
# Names a caller may not set: they would change what runs or where (the jail sets them itself).
RESERVED_ENV = frozenset({"PATH", "HOME", "LD_PRELOAD", "LD_LIBRARY_PATH", "LD_AUDIT", "TMPDIR", "USER",
                          "SANDBOX_RUNTIME"})
MAX_COMMAND_CHARS = 100_000
HOME_NAME = re.compile(r"^[A-Za-z0-9_-][A-Za-z0-9._-]{0,63}$")


def _error(status: int, code: str, message: str) -> JSONResponse:
    return JSONResponse({"error": {"code": code, "message": message}}, status_code=status)


async def _capped_body(request: Request, cap: int) -> bytes:
    data = bytearray()
    async for chunk in request.stream():
        data += chunk
        if len(data) > cap:
            raise Refused(f"A file written here is at most {cap:,} bytes.")
    return bytes(data)


async def _until_hung_up(request: Request, cancel: threading.Event) -> None:
    """Sets `cancel` when the client hangs up before the answer — an agent's run stopped mid-command, its
    worker gone — so the command is killed at once instead of running to its timeout holding the workspace
    (every later command of the workspace waits for its lock). The body was read: the next ASGI message the
    server has for this request is its disconnect."""
    while (await request.receive())["type"] != "http.disconnect":
        pass
    cancel.set()


def _env(body: dict[str, Any]) -> dict[str, str]:
    env = body.get("env") or {}
    if not isinstance(env, dict) or any(
            not isinstance(k, str) or not ENV_NAME.match(k) or k in RESERVED_ENV or not isinstance(v, str)
            or "\x00" in v for k, v in env.items()):
        raise Refused("env must map UPPER_CASE names (not PATH, HOME, LD_*, TMPDIR) to strings.")
    return env


def _home_files(body: dict[str, Any]) -> dict[str, str] | None:
    """A task's private home files (tasks.py): at most 4 plain names (no folder, no dot-name) to text, 64 KiB each."""
    from sandboxd.tasks import HOME_FILE_CAP

    files = body.get("home_files")
    if files is None:
        return None
    if not isinstance(files, dict) or len(files) > 4 or any(
            not isinstance(k, str) or not HOME_NAME.match(k) or not isinstance(v, str) or "\x00" in v
            or len(v.encode()) > HOME_FILE_CAP for k, v in files.items()):
        raise Refused("home_files maps at most 4 plain file names (letters, digits, '.', '-', '_'; not starting "
                      f"with '.') to text of at most {HOME_FILE_CAP:,} bytes.")
    return files


class Service:
    def __init__(self, config: Config) -> None:
        self.config = config
        self.registry = Registry(config)
        jail.write_etc(config.root)
        self.tasks = Tasks(config, self.registry)

    # ------------------------------------------------------------------ plumbing

    def authorized(self, request: Request) -> bool:
        """Sets `request.state.tenant`: "" for the service token, an organization's tenant for its token."""
        header = request.headers.get("authorization", "")
        scheme, _, presented = header.partition(" ")
        if scheme.lower() != "bearer" or not presented:
            return False
        tenant = tokens.principal(self.config.token, presented.strip())
        request.state.tenant = tenant
        return tenant is not None

    def _internal(self, request: Request, workspace_id: str) -> str:
        """A tenant's workspace ids live in its own namespace: another tenant naming the same id reaches
        another workspace, and a tenant can never name one outside its namespace."""
        if not ID_PATTERN.match(workspace_id or "") or len(workspace_id) > 64:
            raise NotFound(f"No open workspace {workspace_id[:64]!r}.")
        tenant = request.state.tenant
        return f"{tenant}-{workspace_id}" if tenant else workspace_id

    def _summary(self, request: Request, workspace: Any) -> dict[str, Any]:
        tenant = request.state.tenant
        data = workspace.summary()
        if tenant:
            data["id"] = data["id"][len(tenant) + 1:]
        return data

    def _workspace(self, request: Request) -> Any:
        return self.registry.get(self._internal(request, request.path_params["id"]))

    async def _json(self, request: Request) -> dict[str, Any]:
        try:
            body = await request.json()
        except ValueError:
            raise Refused("The body must be a JSON object.") from None
        if not isinstance(body, dict):
            raise Refused("The body must be a JSON object.")
        return body

    # ------------------------------------------------------------------ routes

    async def healthz(self, request: Request) -> Response:
        return JSONResponse({"ok": True})

    async def runtimes(self, request: Request) -> Response:
        return JSONResponse({"runtimes": [{"alias": r.alias, "description": r.description}
                                          for r in self.config.runtimes.values()]})

    async def list_workspaces(self, request: Request) -> Response:
        tenant = request.state.tenant
        mine = [w for w in self.registry.items.values() if not tenant or w.id.startswith(f"{tenant}-")]
        return JSONResponse({"workspaces": [self._summary(request, w) for w in mine]})

    async def open_workspace(self, request: Request) -> Response:
        body = await self._json(request)
        runtime = str(body.get("runtime") or next(iter(self.config.runtimes), ""))
        raw_id = str(body.get("id") or "")
        if not ID_PATTERN.match(raw_id) or len(raw_id) > 64:
            raise Refused("A workspace id is 1-64 letters, digits, '-' or '_'.")
        internal = self._internal(request, raw_id)
        tenant = request.state.tenant
        workspace, created = self.registry.open(internal, runtime,
                                                f"tenant:{tenant}" if tenant else f"workspace:{internal}")
        return JSONResponse({**self._summary(request, workspace), "created": created},
                            status_code=201 if created else 200)

    async def show_workspace(self, request: Request) -> Response:
        workspace = self._workspace(request)
        return JSONResponse({**self._summary(request, workspace), "activity": list(workspace.activity),
                             "disk_bytes": jail.disk_usage(workspace.path), "disk_cap": self.config.disk_bytes})

    async def close_workspace(self, request: Request) -> Response:
        workspace = self._workspace(request)
        await self.tasks.stop_workspace(workspace.id)
        async with workspace.lock:
            await asyncio.to_thread(self.registry.close, workspace.id)
        return JSONResponse({"closed": request.path_params["id"]})

    async def execute(self, request: Request) -> Response:
        workspace = self._workspace(request)
        body = await self._json(request)
        command = body.get("command")
        if not isinstance(command, str) or not command.strip():
            raise Refused("command must be a non-empty string.")
        if len(command) > MAX_COMMAND_CHARS:
            raise Refused(f"command is longer than {MAX_COMMAND_CHARS:,} characters.")
        try:
            timeout = float(body.get("timeout") or min(self.config.default_timeout, self.config.max_timeout))
        except (TypeError, ValueError):
            raise Refused("timeout must be a number of seconds.") from None
        if not 0 < timeout <= self.config.max_timeout:
            raise Refused(f"timeout must be more than 0 and at most {self.config.max_timeout} seconds.")
        env = _env(body)
        runtime = self._runtime(workspace)
        if self.tasks.running_in(workspace.id):
            raise Busy("A task is running in this workspace; a command waits for it to end or be stopped.")
        async with workspace.lock:
            workspace.running += 1
            workspace.note("exec", command=command[:200], timeout=timeout)
            try:
                before = await asyncio.to_thread(self.registry.manifest, workspace, with_hash=False)
                cancel = threading.Event()
                hung_up = asyncio.create_task(_until_hung_up(request, cancel))
                try:
                    outcome = await asyncio.to_thread(jail.run, self.config, workspace.path, runtime, command,
                                                      timeout=timeout, env=env, uid=workspace.uid, cancel=cancel)
                except BaseException:
                    cancel.set()  # this handler cancelled (sandboxd stopping): the command does not outlive it
                    raise
                finally:
                    hung_up.cancel()
                after = await asyncio.to_thread(self.registry.manifest, workspace, with_hash=False)
            finally:
                workspace.running -= 1
            workspace.last_max_rss_kb = outcome.max_rss_kb
            changed, deleted = changes(before, after)
            workspace.note("exit", exit_code=outcome.exit_code, timed_out=outcome.timed_out,
                           disk_full=outcome.disk_full, cancelled=outcome.cancelled, duration_ms=outcome.duration_ms)
        return JSONResponse({
            "exit_code": outcome.exit_code, "stdout": outcome.stdout, "stderr": outcome.stderr,
            "stdout_truncated": outcome.stdout_truncated, "stderr_truncated": outcome.stderr_truncated,
            "timed_out": outcome.timed_out, "disk_full": outcome.disk_full, "duration_ms": outcome.duration_ms,
            "max_rss_kb": outcome.max_rss_kb, "changed": changed, "deleted": deleted,
        })

    def _runtime(self, workspace: Any) -> Any:
        runtime = self.config.runtimes.get(workspace.runtime)
        if runtime is None:
            raise Refused(f"The workspace's runtime {workspace.runtime!r} is no longer offered here.")
        return runtime

    async def start_task(self, request: Request) -> Response:
        workspace = self._workspace(request)
        body = await self._json(request)
        command = body.get("command")
        if not isinstance(command, str) or not command.strip() or len(command) > MAX_COMMAND_CHARS:
            raise Refused(f"command must be a non-empty string of at most {MAX_COMMAND_CHARS:,} characters.")
        try:
            timeout = float(body.get("timeout") or self.config.max_task_timeout)
        except (TypeError, ValueError):
            raise Refused("timeout must be a number of seconds.") from None
        if not 0 < timeout <= self.config.max_task_timeout:
            raise Refused(f"timeout must be more than 0 and at most {self.config.max_task_timeout} seconds.")
        egress = body.get("egress") or []
        if not isinstance(egress, list) or not all(isinstance(item, str) for item in egress) or len(egress) > 4:
            raise Refused("egress is a list of at most 4 'host:port' strings.")
        try:
            upstreams = [parse(item) for item in egress]
        except EgressRefused as exc:
            raise Refused(str(exc)) from None
        task = await self.tasks.start(workspace, self._runtime(workspace), command, timeout=timeout,
                                      env=_env(body), upstreams=upstreams, home_files=_home_files(body))
        return JSONResponse(task.status(), status_code=201)

    def _task(self, request: Request) -> Any:
        return self.tasks.get(self._workspace(request).id, request.path_params["task"])

    async def show_task(self, request: Request) -> Response:
        try:
            offset = max(int(request.query_params.get("offset") or 0), 0)
        except ValueError:
            raise Refused("offset must be a whole number.") from None
        return JSONResponse(self._task(request).status(offset))

    async def stop_task(self, request: Request) -> Response:
        task = self._task(request)
        await self.tasks.stop(task)
        offset = request.query_params.get("offset") or ""
        # ASCII digits only: isdigit() alone is true of '³', which int() refuses (a 500).
        return JSONResponse(task.status(int(offset) if offset.isascii() and offset.isdigit() else 0))

    async def files(self, request: Request) -> Response:
        workspace = self._workspace(request)
        with_hash = request.query_params.get("hash") in ("1", "true")
        async with workspace.lock:
            items = await asyncio.to_thread(self.registry.manifest, workspace, with_hash=with_hash)
        return JSONResponse({"files": items})

    async def file(self, request: Request) -> Response:
        workspace = self._workspace(request)
        path = request.query_params.get("path", "")
        if request.method == "PUT":
            data = await _capped_body(request, self.config.read_bytes)
            async with workspace.lock:
                await asyncio.to_thread(self.registry.write, workspace, path, data)
                workspace.note("write", path=path[:200], size=len(data))
            return JSONResponse({"written": path, "size": len(data)})
        if request.method == "DELETE":
            async with workspace.lock:
                await asyncio.to_thread(self.registry.remove, workspace, path)
                workspace.note("remove", path=path[:200])
            return JSONResponse({"removed": path})
        async with workspace.lock:
            data = await asyncio.to_thread(self.registry.read, workspace, path)
        return Response(data, media_type="application/octet-stream")

    async def sweep(self) -> None:
        while True:
            await asyncio.sleep(300)
            for workspace_id in self.registry.idle():
                with contextlib.suppress(NotFound):
                    self.registry.close(workspace_id)
                    log.info("closed idle workspace %s", workspace_id)


def create_app(config: Config) -> Starlette:
    if shutil.which(config.bwrap) is None:
        raise RuntimeError("bubblewrap is not installed")
    service = Service(config)

    def guarded(handler):
        async def endpoint(request: Request) -> Response:
            if not service.authorized(request):
                return _error(401, "unauthorized", "A valid service token is required.")
            try:
                return await handler(request)
            except NotFound as exc:
                return _error(404, "not_found", str(exc))
            except Full as exc:
                return _error(507, "workspace_full", str(exc))
            except Busy as exc:
                return _error(409, "busy", str(exc))
            except Refused as exc:
                return _error(400, "invalid", str(exc))
            except Exception:  # noqa: BLE001 — one envelope, the trace only in the log
                log.exception("sandboxd request failed")
                return _error(500, "internal", "sandboxd failed to handle the request.")
        return endpoint

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        task = asyncio.create_task(service.sweep())
        try:
            yield
        finally:
            task.cancel()

    async def not_found(request: Request, exc: Exception) -> Response:
        return _error(404, "not_found", "No such route.")

    async def bad_method(request: Request, exc: Exception) -> Response:
        return _error(405, "method_not_allowed", "Method not allowed.")

    routes = [
        Route("/healthz", service.healthz),
        Route("/v1/runtimes", guarded(service.runtimes)),
        Route("/v1/workspaces", guarded(service.list_workspaces), methods=["GET"]),
        Route("/v1/workspaces", guarded(service.open_workspace), methods=["POST"]),
        Route("/v1/workspaces/{id}", guarded(service.show_workspace), methods=["GET"]),
        Route("/v1/workspaces/{id}", guarded(service.close_workspace), methods=["DELETE"]),
        Route("/v1/workspaces/{id}/exec", guarded(service.execute), methods=["POST"]),
        Route("/v1/workspaces/{id}/tasks", guarded(service.start_task), methods=["POST"]),
        Route("/v1/workspaces/{id}/tasks/{task}", guarded(service.show_task), methods=["GET"]),
        Route("/v1/workspaces/{id}/tasks/{task}", guarded(service.stop_task), methods=["DELETE"]),
        Route("/v1/workspaces/{id}/files", guarded(service.files), methods=["GET"]),
        Route("/v1/workspaces/{id}/file", guarded(service.file), methods=["GET", "PUT", "DELETE"]),
    ]
    app = Starlette(routes=routes, lifespan=lifespan, exception_handlers={404: not_found, 405: bad_method})
    app.state.service = service
    return app

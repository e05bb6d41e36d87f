"""The stored workspace passes pydantic-ai's own workspace-backend conformance suite (files only: the
command rules skip, as they do for every backend without a shell)."""

from __future__ import annotations

import pytest
from asgiref.sync import sync_to_async
from pydantic_ai.workspaces.conformance import WorkspaceBackendSuite

from workspaces.models import Workspace
from workspaces.store import DatabaseWorkspaceBackend


def _workspace_of(agent, label: str) -> Workspace:
    return Workspace.objects.create(organization_id=agent.organization_id, agent=agent, scope="agent", key=label,
                                    label=label)


class TestStoredWorkspace(WorkspaceBackendSuite):
    pytestmark = [pytest.mark.anyio, pytest.mark.django_db(transaction=True)]

    @pytest.fixture
    def anyio_backend(self):
        return "asyncio"

    @pytest.fixture
    def has_real_posix_shell(self):
        return False  # files only: the command rules skip at once instead of polling for a shell's output

    @pytest.fixture
    def backend(self, workspace):
        return DatabaseWorkspaceBackend(str(workspace.pk), run_id=None)

    @pytest.fixture
    def attach_backend(self):
        return lambda ref: DatabaseWorkspaceBackend(ref.id)

    @pytest.fixture
    def destructive_backend(self, sandbox_agent):
        # A workspace of its own to destroy (made here: the rule calls the factory inside its event loop).
        doomed = _workspace_of(sandbox_agent, "doomed")
        return lambda: DatabaseWorkspaceBackend(str(doomed.pk), run_id=None)

    @pytest.fixture
    def destroy_environment(self):
        async def destroy(backend):
            await sync_to_async(Workspace.objects.filter(pk=backend.workspace_id).delete)()

        return destroy


class TestSandboxServiceWorkspace(WorkspaceBackendSuite):
    """The `service` backend — stored files with commands on a real sandboxd (bubblewrap) — under the same suite,
    command rules included: what the agent's shell tools promise is checked against the library's own rules."""

    pytestmark = [pytest.mark.anyio, pytest.mark.django_db(transaction=True)]

    @pytest.fixture
    def anyio_backend(self):
        return "asyncio"

    @pytest.fixture
    def has_real_posix_shell(self):
        return True

    @pytest.fixture
    def filesystem_honors_shell_permissions(self):
        # The file tools read and write the stored copy (the one the Files panel shows), which has no permission
        # bits: a `chmod 000` in the sandbox does not make the stored file unreadable to them.
        return False

    @pytest.fixture
    def client(self, sandboxd_server):
        from workspaces.client import SandboxdClient

        return SandboxdClient(sandboxd_server.url, sandboxd_server.token, guarded=False)

    @pytest.fixture
    def backend(self, workspace, client):
        from workspaces.service import ServiceWorkspaceBackend

        return ServiceWorkspaceBackend(str(workspace.pk), run_id=None, client=client)

    @pytest.fixture
    def attach_backend(self, client):
        from workspaces.service import ServiceWorkspaceBackend

        return lambda ref: ServiceWorkspaceBackend(ref.id, client=client)

    @pytest.fixture
    def destructive_backend(self, sandbox_agent, client):
        from workspaces.service import ServiceWorkspaceBackend

        doomed = _workspace_of(sandbox_agent, "doomed")
        return lambda: ServiceWorkspaceBackend(str(doomed.pk), run_id=None, client=client)

    async def test_cancellation_stops_foreground_work(self, backend, sandboxd_server):
        """The library's rule polls the command's pid file through the file API while the command runs; here the
        file tools read the stored copy, which a command's files reach when it ends — so the file is looked for
        in the sandbox on the host, and what proves the command died is that it never wrote what it would next
        (a command still running would hold the workspace, and the next one would find it)."""
        import anyio

        started = sandboxd_server.root / "workspaces" / backend.remote_id / "started"
        async with anyio.create_task_group() as group:
            group.start_soon(backend.run, ["sh", "-c", "echo go > started; sleep 20; echo late > late"])
            with anyio.fail_after(30):
                while not started.exists():
                    await anyio.sleep(0.05)
            group.cancel_scope.cancel()
        after = await backend.run(["sh", "-c", "test -e late && echo lived-on || echo killed"], timeout=60)
        assert after.stdout.strip() == "killed"

    async def test_background_child_does_not_hold_up_completed_command(self, backend):
        """The library's rule: a background child holding stdout open does not keep a finished command from
        returning. Its clean-up then releases the child through the file API and waits up to 30 s for the child's
        file — here a command's children end with it (the jail's PID namespace dies with the command), so that
        wait ran its full 30 s for nothing. The command is checked as the rule does; then that the child did not
        live on: released from inside the sandbox, it never writes its file."""
        import anyio

        child = 'while [ ! -f release ]; do sleep 0.1; done; printf finished > finished'
        with anyio.fail_after(60):  # a hang guard, as the library's
            result = await backend.run(["sh", "-c", f"({child}) & printf done"])
        assert (result.exit_code, result.stdout) == (0, "done")
        after = await backend.run(["sh", "-c", "touch release; sleep 1; test -e finished && echo lived-on || echo ended"],
                                  timeout=60)
        assert after.stdout.strip() == "ended"

    async def test_destroying_environment_during_command_raises_unavailable(self, destructive_backend,
                                                                           destroy_environment, sandboxd_server):
        """The library's rule, its wait for the command looked for on the host (as above): the workspace deleted
        while a command runs in its sandbox — its conversation deleted — ends the command's call unavailable."""
        import anyio
        from pydantic_ai.workspaces import WorkspaceUnavailableError

        backend = destructive_backend()
        started = sandboxd_server.root / "workspaces" / backend.remote_id / "started"

        async def run_command() -> None:
            with pytest.raises(WorkspaceUnavailableError):
                await backend.run(["sh", "-c", "echo go > started; sleep 3; echo done > done"], timeout=30)

        async with anyio.create_task_group() as group:
            group.start_soon(run_command)
            with anyio.fail_after(30):
                while not started.exists():
                    await anyio.sleep(0.05)
            await destroy_environment(backend)

    @pytest.fixture
    def destroy_environment(self):
        async def destroy(backend):
            await sync_to_async(Workspace.objects.filter(pk=backend.workspace_id).delete)()

        return destroy


@pytest.mark.django_db
def test_a_write_into_a_workspace_deleted_meanwhile_is_unavailable_not_a_broken_row(sandbox_agent):
    """A backend holds its workspace's id for a whole run; the workspace may go meanwhile (its agent deleted, a
    retention sweep). A write then says the workspace is gone — the answer a tool turns into words — where it
    was a foreign-key error out of the database."""
    from pydantic_ai.workspaces import WorkspaceUnavailableError

    from workspaces import store

    gone = _workspace_of(sandbox_agent, "gone")
    workspace_id = str(gone.pk)
    gone.delete()
    with pytest.raises(WorkspaceUnavailableError):
        store.write(workspace_id, "/workspace/notes.md", b"x", run_id=None)
    with pytest.raises(WorkspaceUnavailableError):
        store.make_dir(workspace_id, "/workspace/out/deep")

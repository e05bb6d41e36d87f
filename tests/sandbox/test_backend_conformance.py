"""The stored workspace passes pydantic-ai's own workspace-backend conformance suite (files only: the
command rules skip, as they do for every backend without a shell)."""

from __future__ import annotations

import pytest
from asgiref.sync import sync_to_async
from pydantic_ai.workspaces.conformance import WorkspaceBackendSuite

from workspaces.models import Workspace
from workspaces.store import DatabaseWorkspaceBackend


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
    def destroy_environment(self):
        async def destroy(backend):
            await sync_to_async(Workspace.objects.filter(pk=backend.workspace_id).delete)()

        return destroy

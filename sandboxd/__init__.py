"""sandboxd — this deployment's own sandbox service: workspaces on disk, commands run under bubblewrap.

A separate process (`python -m sandboxd`), never imported by the web app or the workers: the platform
reaches it over HTTP through a sandbox connection (workspaces/connections.py), authenticated by
one service token (`manage.py sandbox_token`).

Why not pydantic-ai-backend's own `sandboxd` (pydantic_ai_backends.remote.server): it is built around the
Docker daemon (its sessions are containers, its builder a `DockerSandbox`) and FastAPI, and this deployment
must isolate commands on a machine without Docker. The wire here is small and our own; the isolation is
bubblewrap (jail.py), the same tool Claude Code's Linux sandbox uses.
"""

"""Workspaces: an agent's files that survive between turns (stored rows: store.py), the sandbox services they
run commands on (sandboxd and Daytona: client.py, daytona.py, service.py) and an organization's connections to
those services (connections.py, api.py, Settings → Sandboxes). Infrastructure that the sandbox, coding-agent,
artifacts, visuals and generated-media capabilities, the chat apps' files and the console all use."""

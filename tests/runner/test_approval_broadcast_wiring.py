"""A decision taken in a process that never imports the ASGI routing (a Celery worker, a bot's supervisor)
still reaches open chat tabs: AgentsConfig.ready connects the broadcast."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

PROBE = """
import django
django.setup()
import sys
from governance.signals import approval_decided
assert "config.routing" not in sys.modules and "config.asgi" not in sys.modules
keys = [receiver[0] for receiver in approval_decided.receivers]
print(any(key[0] == "agents.chat.approval_decided" for key in keys))
"""


def test_a_process_without_the_asgi_routing_broadcasts_approval_decisions():
    import os

    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings"}
    done = subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1] == "True"

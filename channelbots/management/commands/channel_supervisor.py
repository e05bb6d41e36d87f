"""`manage.py channel_supervisor`: keep polling / Socket Mode / event-stream bots connected (own process)."""

from __future__ import annotations

import signal

from django.core.management.base import BaseCommand

from channelbots.supervisor import Supervisor


class Command(BaseCommand):
    help = "Run the channel-bot supervisor (Telegram polling, Slack Socket Mode, Mattermost event streams)."

    def handle(self, *args, **options):
        supervisor = Supervisor()
        signal.signal(signal.SIGTERM, lambda *_: supervisor.stopping.set())
        signal.signal(signal.SIGINT, lambda *_: supervisor.stopping.set())
        self.stdout.write("channel supervisor: running")
        supervisor.serve()

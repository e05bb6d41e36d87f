"""`manage.py channel_test_message --bot-id <uuid> --chat-id <id> [--text …]`: post one message as the bot."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from channelbots.models import ChannelBot
from channelbots.platforms import PlatformError, client_for


class Command(BaseCommand):
    help = "Post a test message from a channel bot to a chat."

    def add_arguments(self, parser):
        parser.add_argument("--bot-id", required=True)
        parser.add_argument("--chat-id", required=True)
        parser.add_argument("--text", default="Hello from AgenticOS — this bot can post here.")

    def handle(self, *args, **o):
        bot = ChannelBot.objects.filter(pk=o["bot_id"]).first()
        if bot is None:
            raise CommandError("No such bot.")
        try:
            ref = client_for(bot).post(o["chat_id"], o["text"])
        except PlatformError as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(f"posted ({ref})")

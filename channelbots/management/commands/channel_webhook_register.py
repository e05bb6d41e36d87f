"""`manage.py channel_webhook_register --bot-id <uuid>`: switch a bot to webhook mode and do both halves —
mint the secret here (Telegram) and register the URL with the platform, or print the URL to paste
(Slack Request URL, Mattermost outgoing-webhook callback)."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from agenticos.errors import Invalid
from agenticos.models import Membership
from agenticos.tenancy import actor_for_membership
from channelbots import services
from channelbots.models import ChannelBot


class Command(BaseCommand):
    help = "Put a channel bot in webhook mode and register its webhook."

    def add_arguments(self, parser):
        parser.add_argument("--bot-id", required=True)

    def handle(self, *args, **o):
        bot = ChannelBot.objects.filter(pk=o["bot_id"]).first()
        if bot is None:
            raise CommandError("No such bot.")
        membership = Membership.objects.select_related("user", "organization").filter(
            organization_id=bot.organization_id, role="owner").first()
        if membership is None:
            raise CommandError("The bot's organization has no owner to act as.")
        try:
            url = services.register_webhook(actor=actor_for_membership(membership), bot=bot)
        except Invalid as exc:
            raise CommandError(str(exc)) from None
        if bot.platform == "telegram":
            self.stdout.write(f"Telegram webhook registered: {url}")
        else:
            self.stdout.write(f"Paste this URL into {bot.platform}: {url}")

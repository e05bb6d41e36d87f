"""`manage.py channel_add_bot --platform mattermost --name Ops --token … --org <id> [--api-base-url …]
[--webhook-secret …] [--signing-secret …] [--app-token …] [--transport webhook|polling] [--as <email>]`."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from agenticos.errors import DomainError
from agenticos.models import Membership
from agenticos.tenancy import actor_for_membership
from channelbots import services


class Command(BaseCommand):
    help = "Register a channel bot (credentials are sealed; nothing secret is printed)."

    def add_arguments(self, parser):
        parser.add_argument("--platform", required=True, choices=["slack", "telegram", "mattermost"])
        parser.add_argument("--name", required=True)
        parser.add_argument("--token", required=True)
        parser.add_argument("--org", required=True, help="organization id")
        parser.add_argument("--as", dest="email", default="", help="member acting (default: the first owner)")
        parser.add_argument("--api-base-url", default="")
        parser.add_argument("--transport", default="webhook", choices=["webhook", "polling"])
        parser.add_argument("--signing-secret", default="")
        parser.add_argument("--app-token", default="")
        parser.add_argument("--webhook-secret", default="")

    def handle(self, *args, **o):
        memberships = Membership.objects.select_related("user", "organization").filter(organization_id=o["org"])
        membership = (memberships.filter(user__email=o["email"]) if o["email"] else
                      memberships.filter(role="owner")).first()
        if membership is None:
            raise CommandError("No such organization or member.")
        data = {"platform": o["platform"], "name": o["name"], "token": o["token"], "transport": o["transport"],
                "api_base_url": o["api_base_url"], "signing_secret": o["signing_secret"],
                "app_token": o["app_token"], "webhook_secret": o["webhook_secret"]}
        try:
            bot = services.create_bot(actor=actor_for_membership(membership), data=data)
        except DomainError as exc:
            raise CommandError(exc.message) from None
        from channelbots.api import webhook_url

        self.stdout.write(f"bot {bot.pk} registered ({bot.platform}, {bot.transport})")
        if bot.transport == "webhook":
            self.stdout.write(f"webhook URL: {webhook_url(bot)}")

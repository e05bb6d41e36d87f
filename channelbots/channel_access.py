"""What the channel tools (capabilities/channel_tools) reach of a chat app: the bot's platform client and the
channel a run came from. Registered in ChannelbotsConfig.ready()."""

from __future__ import annotations

from typing import Any

from agents.models import Run
from channelbots.models import ChannelBot
from channelbots.platforms import client_for


def channel_of_run(run_id: str) -> tuple[Any, dict[str, Any]] | None:
    run = Run.objects.filter(pk=run_id).only("options", "organization_id").first()
    channel = (run.options or {}).get("channel") if run else None
    if not channel or run is None:
        return None
    bot = ChannelBot.objects.filter(pk=channel.get("bot_id"), organization_id=run.organization_id).first()
    if bot is None:
        return None
    return client_for(bot), channel

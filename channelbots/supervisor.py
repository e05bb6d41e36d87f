"""Placeholder replaced below."""


def notify_changed(bot_id: str) -> None:
    return None

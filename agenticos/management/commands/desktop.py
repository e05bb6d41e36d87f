"""`manage.py desktop`: the console in a desktop window (the surfaces spec's desktop app).

A native window around the same console, loaded from the same server — nothing bundled: no copy of the
pages, no second login system, no local data. The window is pywebview's (Qt WebEngine or GTK WebKit, whichever
the machine has: `pip install "pywebview[qt]"`); it only opens `--url` (FRONTEND_URL by default) and
signs in there like any browser. Links that open a new window (target=_blank) go to the system browser
(pywebview's default), so the console's own pages are what the window shows.

    python manage.py desktop                       # FRONTEND_URL
    python manage.py desktop --url https://agents.example.com
"""

from __future__ import annotations

import importlib
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

TITLE = "AgenticOS"
DEFAULT_SIZE = (1280, 860)
MIN_SIZE = (390, 600)


def console_url(url: str | None) -> str:
    """The address the window opens: an http(s) URL with a host and without credentials in it."""
    value = (url or settings.FRONTEND_URL).strip()
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise CommandError(f"--url must be an http(s) address of the console, not {value!r}.")
    if parts.username or parts.password:
        raise CommandError("--url must not carry a user name or password: sign in in the window.")
    return value


def load_webview() -> Any:
    try:
        return importlib.import_module("webview")
    except ImportError:
        raise CommandError(
            'The desktop window needs pywebview and a web engine: pip install "pywebview[qt]" '
            "(or pywebview with GTK's WebKit from the system packages)."
        ) from None


class Command(BaseCommand):
    help = "Open the console in a desktop window (pywebview), loaded from the running server."

    def add_arguments(self, parser):
        parser.add_argument("--url", help="The console's address (default: FRONTEND_URL).")
        parser.add_argument("--width", type=int, default=DEFAULT_SIZE[0])
        parser.add_argument("--height", type=int, default=DEFAULT_SIZE[1])

    def handle(self, *args: Any, **options: Any) -> None:
        url = console_url(options.get("url"))
        webview = load_webview()
        width = max(MIN_SIZE[0], options["width"])
        height = max(MIN_SIZE[1], options["height"])
        webview.create_window(TITLE, url, width=width, height=height, min_size=MIN_SIZE,
                              text_select=True)
        self.stdout.write(f"Opening {url} in a desktop window.")
        # private_mode=False keeps the session cookie between launches, as a browser profile would.
        webview.start(private_mode=False, storage_path=str(settings.DATA_DIR / "desktop"))


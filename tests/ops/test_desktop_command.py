"""`manage.py desktop`: a pywebview window around the console at FRONTEND_URL (or --url), nothing bundled.
The GUI toolkit is the outside world here: a recording stand-in for the `webview` module takes its place."""

from __future__ import annotations

import sys
import types

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError


@pytest.fixture
def fake_webview(monkeypatch):
    calls: dict[str, object] = {}
    module = types.ModuleType("webview")
    module.create_window = lambda title, url, **options: calls.update(window=(title, url, options))  # type: ignore[attr-defined]
    module.start = lambda **options: calls.update(start=options)  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "webview", module)
    return calls


def test_it_opens_the_console_at_frontend_url_by_default(fake_webview, settings, tmp_path):
    settings.FRONTEND_URL = "https://agents.example.com"
    settings.DATA_DIR = tmp_path
    call_command("desktop")
    title, url, options = fake_webview["window"]
    assert (title, url) == ("AgenticOS", "https://agents.example.com")
    assert options["min_size"] == (390, 600)
    assert fake_webview["start"] == {"private_mode": False, "storage_path": str(tmp_path / "desktop")}


def test_it_opens_the_given_url(fake_webview, settings, tmp_path):
    settings.DATA_DIR = tmp_path
    call_command("desktop", "--url", "http://127.0.0.1:8000/chat/", "--width", "200")
    _title, url, options = fake_webview["window"]
    assert url == "http://127.0.0.1:8000/chat/" and options["width"] == 390


@pytest.mark.parametrize("url", ["file:///etc/passwd", "javascript:alert(1)", "http://", "ftp://host/",
                                 "https://alice:secret@agents.example.com/"])
def test_it_refuses_an_address_that_is_not_the_console_and_opens_nothing(fake_webview, url):
    with pytest.raises(CommandError):
        call_command("desktop", "--url", url)
    assert fake_webview == {}


def test_without_pywebview_it_says_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "webview", None)  # an import of it fails
    with pytest.raises(CommandError, match="pywebview"):
        call_command("desktop", "--url", "http://127.0.0.1:8000/")

"""Every visible string of the console templates goes through Django's translation (English source).

The scan removes what is translated ({% trans %}, {% blocktrans %}…{% endblocktrans %}), template variables
and tags, scripts and styles, and elements marked translate="no" (code samples), then fails on any letter left
in text or in a visible attribute (aria-label, placeholder, title, alt, button value).
"""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

TEMPLATES = Path(__file__).resolve().parents[2] / "console" / "templates"
VISIBLE_ATTRIBUTES = {"aria-label", "placeholder", "title", "alt"}
VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}

_BLOCKS = [
    re.compile(r"{%\s*comment\s*%}.*?{%\s*endcomment\s*%}", re.S),
    re.compile(r"{#.*?#}", re.S),
    re.compile(r"{%\s*blocktrans(late)?\b.*?%}.*?{%\s*endblocktrans(late)?\s*%}", re.S),
    re.compile(r"{%\s*(trans|translate)\s+.*?%}", re.S),
    re.compile(r"{{.*?}}", re.S),
    re.compile(r"{%.*?%}", re.S),
]


def untranslated(source: str) -> str:
    for pattern in _BLOCKS:
        source = pattern.sub(" ", source)
    return source


class _Scanner(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.found: list[str] = []
        self.skip: list[str] = []  # stack of tags whose content is not visible text

    def handle_starttag(self, tag, attrs):
        attributes = dict(attrs)
        if tag in ("script", "style") or attributes.get("translate") == "no":
            if tag not in VOID:
                self.skip.append(tag)
            return
        for name, value in attrs:
            if value and name in VISIBLE_ATTRIBUTES and re.search(r"[A-Za-z]", value):
                self.found.append(f"<{tag} {name}={value!r}>")

    def handle_endtag(self, tag):
        if self.skip and self.skip[-1] == tag:
            self.skip.pop()

    def handle_data(self, data):
        if not self.skip and re.search(r"[A-Za-z]{2,}", data):
            self.found.append(data.strip())


def leftovers(path: Path) -> list[str]:
    text = untranslated(path.read_text())
    if path.suffix == ".txt":
        return [line.strip() for line in text.splitlines() if re.search(r"[A-Za-z]{2,}", line)]
    scanner = _Scanner()
    scanner.feed(text)
    return scanner.found


CONSOLE_TEMPLATES = sorted(p for p in TEMPLATES.rglob("*") if p.suffix in (".html", ".txt"))


@pytest.mark.parametrize("path", CONSOLE_TEMPLATES, ids=lambda p: str(p.relative_to(TEMPLATES)))
def test_no_template_shows_text_that_bypasses_translation(path):
    assert leftovers(path) == []


def test_the_scan_catches_a_bare_string_and_a_bare_attribute(tmp_path):
    page = tmp_path / "bad.html"
    page.write_text('{% load i18n %}<p>{% trans "Fine" %}</p><p>Not translated</p><input placeholder="Type here">')
    assert leftovers(page) == ["Not translated", "<input placeholder='Type here'>"]

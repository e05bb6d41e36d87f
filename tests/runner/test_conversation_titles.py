"""Conversation titles a person can read: the first line with words, without markdown, cut at a word —
set where a member's conversation is created (agents.chat.start_member_run)."""

from __future__ import annotations

import pytest

from agents.chat import start_member_run
from agents.models import Conversation
from agents.titles import FALLBACK, conversation_title
from tests import factories
from tests.api.conftest import actor_of


@pytest.mark.parametrize(("prompt", "title"), [
    ("What time is it in Madrid?", "What time is it in Madrid?"),
    ("## Quarterly **sales** report\nPlease chart it.", "Quarterly sales report"),
    ("\n\n> _Summarize_ this: [the memo](https://example.com/memo)\nthanks", "Summarize this: the memo"),
    ("```python\nprint('x')\n```\nWhy does `print` fail?", "Why does print fail?"),
    ("- [ ] buy milk\n- [x] call Ana", "buy milk"),
    ("1. First step\n2. Second", "First step"),
    ("---\n# Title", "Title"),
    ("![diagram](x.png) explain", "diagram explain"),
    ("<b>Bold</b> words", "Bold words"),
    ("Hello<br>world", "Hello world"),
    ("Rename snake_case_names in my_file.py", "Rename snake_case_names in my_file.py"),
    ("```\nSELECT 1;\n```", "SELECT 1;"),
    ("   \n\n", FALLBACK),
    ("***", FALLBACK),
])
def test_a_title_is_the_first_readable_line_without_markdown(prompt, title):
    assert conversation_title(prompt) == title


def test_a_long_line_is_cut_at_a_word_with_an_ellipsis():
    title = conversation_title("Please write a detailed migration plan for moving our billing database to the new cluster")
    assert title == "Please write a detailed migration plan for moving our…"
    assert len(title) <= 60


def test_one_long_word_is_cut_anyway():
    assert conversation_title("x" * 300) == "x" * 59 + "…"


@pytest.mark.django_db
def test_a_new_chat_conversation_gets_the_readable_title(org, owner):
    agent = factories.published_agent(org, owner, name="Helper")
    _run, admitted = start_member_run(actor=actor_of(owner, org), agent_id=agent.pk,
                                      text="# Plan\n**Book** flights to Lisbon for the offsite", surface="web",
                                      create_conversation=True)
    conversation = Conversation.objects.get(pk=admitted.conversation.pk)
    assert conversation.title == "Plan"

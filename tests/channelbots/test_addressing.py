"""Who the bot answers: DMs always, group DMs and channels only when named (or @agent-slug)."""

from __future__ import annotations

import pytest

from channelbots.incoming import CHANNEL, DM, GROUP_DM, Incoming
from channelbots.router import agent_handle, is_addressed


def incoming(text: str, chat_type: str, mentioned: bool = False) -> Incoming:
    return Incoming(platform="slack", bot_id="b", chat_id="C", chat_type=chat_type, sender_id="U1", text=text,
                    mentioned=mentioned)


@pytest.mark.parametrize(
    ("text", "chat_type", "mentioned", "expected"),
    [
        ("hello", DM, False, True),
        ("hello", GROUP_DM, False, False),
        ("hello", GROUP_DM, True, True),
        ("hello", CHANNEL, False, False),
        ("<@UBOT> hello", CHANNEL, True, True),
        ("hey @support-agent what's up", CHANNEL, False, True),
        ("hey @other-agent what's up", CHANNEL, False, False),
        ("@channel @here @all @everyone", CHANNEL, False, False),
        ("mail me at ops@support-agent.example", CHANNEL, False, False),
    ],
)
def test_answering_rules_per_chat_type(text, chat_type, mentioned, expected):
    assert is_addressed(incoming(text, chat_type, mentioned), "support-agent") is expected


def test_an_agent_named_like_a_room_handle_gets_an_agent_suffix():
    assert agent_handle("here") == "here-agent"
    assert is_addressed(incoming("@here-agent help", CHANNEL), "here")
    assert not is_addressed(incoming("@here help", CHANNEL), "here")

"""conversation_search: full-text search exactly as specified (simple config, websearch syntax, ts_rank_cd,
bold passages), the personal corpus, refusals in group chats / schedules / anonymous runs, reading windows."""

from __future__ import annotations

import pytest
from asgiref.sync import sync_to_async
from guardian.shortcuts import assign_perm

from agents.models import Conversation, Message
from capabilities import registry
from tests import factories
from tests.knowledge.helpers import arun

pytestmark = pytest.mark.django_db(transaction=True)


def _conversation(agent, owner, title, turns, surface="web", **extra):
    conversation = Conversation.objects.create(organization_id=agent.organization_id, agent=agent, owner=owner,
                                               title=title, surface=surface, **extra)
    for i, text in enumerate(turns):
        Message.objects.create(conversation=conversation, role="user" if i % 2 == 0 else "assistant",
                               author=owner if i % 2 == 0 else None, content=text)
    return conversation


@pytest.fixture
def agent(org, owner):
    return factories.published_agent(org, owner, capabilities=[{"id": "conversation_search"}])


@pytest.fixture
def history(agent, owner):
    return {
        "pricing": _conversation(agent, owner, "Q3 pricing", [
            "What discount do we give for Q3 pricing?", "We agreed on a 12% discount for annual plans.",
            "And the Q3 pricing for monthly?", "Monthly stays at list price."]),
        "meetings": _conversation(agent, owner, "Standup", ["Move the weekly meetings to Tuesday.", "Done."]),
        "draft": _conversation(agent, owner, "Draft", ["A draft about discount codes.", "Noted."]),
    }


async def _search(agent, owner, query, **deps):
    outcome, _ = await arun(agent, [("search_conversations", {"query": query})], user=owner, **deps)
    return outcome.returns[0]


async def test_it_finds_a_conversation_by_what_was_said_with_matches_in_bold(agent, owner, history):
    text = await _search(agent, owner, '"Q3 pricing"')
    assert "[1] Q3 pricing" in text and "Matched turns: 2." in text and "Last active:" in text
    assert "**Q3** **pricing**" in text
    assert "Standup" not in text and "Draft" not in text


async def test_or_and_a_leading_minus_work_and_ranking_follows_ts_rank_cd(agent, owner, history):
    either = await _search(agent, owner, "discount or tuesday")
    assert {"Q3 pricing", "Standup", "Draft"} <= {line.split("] ", 1)[1].split(" (id")[0]
                                                   for line in either.splitlines() if line.startswith("[")}
    excluded = await _search(agent, owner, "discount -draft")
    assert "Q3 pricing" in excluded and "Draft" not in excluded


async def test_words_are_not_stemmed_and_the_result_says_to_try_another_form(agent, owner, history):
    assert "Standup" in await _search(agent, owner, "meetings")
    missing = await _search(agent, owner, "meeting")
    assert missing.startswith("No past conversation matches") and "meeting / meetings" in missing


async def test_the_corpus_is_the_persons_own_and_shared_never_anothers(org, agent, owner, member, history):
    other = await sync_to_async(_conversation)(agent, member, "Member secrets", ["The discount vault code is 42."])
    text = await _search(agent, owner, "vault")
    assert text.startswith("No past conversation")
    await sync_to_async(assign_perm)("agents.view_conversation", owner, other)
    assert "Member secrets" in await _search(agent, owner, "vault")


async def test_a_conversation_of_another_organization_or_a_trigger_log_is_never_searched(
        agent, owner, outsider, outsider_org):
    foreign_agent = await sync_to_async(factories.published_agent)(outsider_org, outsider)
    await sync_to_async(_conversation)(foreign_agent, owner, "Foreign", ["pineapple roadmap"])
    await sync_to_async(_conversation)(agent, owner, "Nightly report", ["pineapple numbers"], surface="schedule")
    assert (await _search(agent, owner, "pineapple")).startswith("No past conversation")


async def test_channel_threads_count_only_when_membership_is_confirmed(agent, owner, settings):
    thread = await sync_to_async(_conversation)(agent, None, "Slack thread", ["kiwi launch plan"], surface="slack")
    await sync_to_async(Message.objects.create)(conversation=thread, role="user", author=owner, content="kiwi me too")
    assert (await _search(agent, owner, "kiwi")).startswith("No past conversation")
    settings.CHANNEL_MEMBERSHIP_CHECK = "tests.knowledge.test_conversation_search.confirm_member"
    assert "Slack thread" in await _search(agent, owner, "kiwi")


def confirm_member(conversation, user_id) -> bool:
    return True


async def test_the_current_conversation_is_not_a_result(agent, owner, history):
    text = await _search(agent, owner, "tuesday", conversation=history["meetings"])
    assert text.startswith("No past conversation")


@pytest.mark.parametrize(("surface", "options", "reason"), [
    ("slack", {"chat_type": "group"}, "group chat"),
    ("schedule", {"trigger_kind": "schedule", "run_as_creator": True}, "schedule or an event trigger"),
    ("embed", {}, "no signed-in person"),
    ("api", {}, "no signed-in person"),
])
async def test_both_tools_refuse_where_the_person_is_not_the_only_listener(agent, owner, history, surface,
                                                                          options, reason):
    outcome, _ = await arun(agent, [("search_conversations", {"query": "discount"}),
                                    ("read_conversation", {"conversation_id": str(history["pricing"].pk)})],
                            user=owner, surface=surface, options=options)
    assert all(r.startswith("Refused") and reason in r for r in outcome.returns)
    assert all("12%" not in r for r in outcome.returns)


async def test_a_direct_message_with_a_linked_account_searches_like_web_chat(agent, owner, history):
    text = await _search(agent, owner, "tuesday", surface="telegram", options={"chat_type": "direct"})
    assert "Standup" in text


async def test_read_conversation_returns_markdown_windows_with_how_to_ask_for_more(agent, owner):
    long = await sync_to_async(_conversation)(agent, owner, "Long", [f"turn {i}" for i in range(45)])
    outcome, _ = await arun(agent, [("read_conversation", {"conversation_id": str(long.pk)}),
                                    ("read_conversation", {"conversation_id": str(long.pk), "start": 41})],
                            user=owner)
    first, last = outcome.returns
    assert first.startswith("# Long\n\nUSER: turn 0\n\nAI: turn 1")
    assert f'call read_conversation(conversation_id="{long.pk}", start=21)' in first
    assert "USER: turn 40" in last and "Turns 41-45 of 45: the end" in last


async def test_read_conversation_names_speakers_when_several_people_spoke(agent, owner, member):
    room = await sync_to_async(_conversation)(agent, owner, "Room", ["hello"])
    await sync_to_async(Message.objects.create)(conversation=room, role="user", author_label="Bea", content="hi")
    outcome, _ = await arun(agent, [("read_conversation", {"conversation_id": str(room.pk)})], user=owner)
    assert "USER (" in outcome.returns[0] and "USER (Bea): hi" in outcome.returns[0]


async def test_read_conversation_does_not_open_anothers_conversation(agent, owner, member):
    theirs = await sync_to_async(_conversation)(agent, member, "Theirs", ["private words"])
    outcome, _ = await arun(agent, [("read_conversation", {"conversation_id": str(theirs.pk)})], user=owner)
    assert "private words" not in outcome.returns[0] and "No conversation" in outcome.returns[0]


async def test_removing_the_scope_turns_it_off(agent, owner, settings):
    settings.DEFAULT_GRANTED_SCOPES = ["knowledge:read"]
    outcome, built = await arun(agent, [], user=owner)
    assert outcome.script.offered == [] and "conversations:read" in built.skipped["conversation_search"]
    assert registry.get("conversation_search").scopes == ("conversations:read",)


# ------------------------------------------------------------------ the index design (agents migration 0005)


def _titles(hits) -> list[str]:
    return [hit.title for hit in hits]


def test_a_phrase_matches_only_adjacent_words_and_an_excluded_phrase_only_the_phrase(agent, owner, monkeypatch):
    from knowledge import conversations

    # a window of one: a newer near-miss taking the only slot would hide the older real match
    monkeypatch.setattr(conversations, "RANK_WINDOW", 1)
    _conversation(agent, owner, "Adjacent", ["the q3 pricing sheet"])
    _conversation(agent, owner, "Apart", ["pricing for q3 is open"])
    search = lambda q: _titles(conversations.search(agent.organization_id, owner.pk, q))  # noqa: E731
    assert search('"q3 pricing"') == ["Adjacent"]
    assert search('q3 -"q3 pricing"') == ["Apart"]
    assert search("q3 pricing") == ["Apart"]  # both match: the window holds the newer one


def test_a_query_of_exclusions_only_searches_the_persons_corpus_and_an_empty_one_finds_nothing(
        agent, owner, member):
    from knowledge import conversations

    _conversation(agent, owner, "Mine", ["plain words"])
    _conversation(agent, owner, "Drafty", ["a draft"])
    _conversation(agent, member, "Theirs", ["other words"])
    assert _titles(conversations.search(agent.organization_id, owner.pk, "-draft")) == ["Mine"]
    assert conversations.search(agent.organization_id, owner.pk, '"-" !') == []


def test_system_messages_are_not_searched(agent, owner):
    from knowledge import conversations

    conversation = _conversation(agent, owner, "Sys", ["hello"])
    Message.objects.create(conversation=conversation, role="system", content="mango instructions")
    assert conversations.search(agent.organization_id, owner.pk, "mango") == []


def test_a_conversation_given_to_another_owner_is_searched_by_them_and_no_longer_by_the_first(
        agent, owner, member):
    from knowledge import conversations

    conversation = _conversation(agent, owner, "Handover", ["papaya budget", "noted"])
    assert _titles(conversations.search(agent.organization_id, owner.pk, "papaya")) == ["Handover"]
    conversation.owner = member
    conversation.save()
    assert conversations.search(agent.organization_id, owner.pk, "papaya") == []
    assert _titles(conversations.search(agent.organization_id, member.pk, "papaya")) == ["Handover"]
    conversation.surface = "schedule"
    conversation.save()
    assert conversations.search(agent.organization_id, member.pk, "papaya") == []


def test_the_same_person_in_another_organization_keeps_two_corpora(agent, owner, outsider_org, outsider,
                                                                  monkeypatch):
    from agenticos.models import Membership
    from knowledge import conversations

    monkeypatch.setattr(conversations, "RANK_WINDOW", 1)
    Membership.objects.create(organization=outsider_org, user=owner, role="member")
    foreign_agent = factories.published_agent(outsider_org, outsider)
    _conversation(agent, owner, "Here", ["durian notes"])
    _conversation(foreign_agent, owner, "Elsewhere", ["durian plan"])
    assert _titles(conversations.search(agent.organization_id, owner.pk, "durian")) == ["Here"]
    assert _titles(conversations.search(outsider_org.pk, owner.pk, "durian")) == ["Elsewhere"]


def test_past_the_rank_window_the_newest_matches_choose_and_the_result_says_how_to_narrow(
        agent, owner, monkeypatch):
    from knowledge import conversations

    monkeypatch.setattr(conversations, "RANK_WINDOW", 3)
    # the oldest conversation is the best match (three occurrences), then four newer single matches
    _conversation(agent, owner, "Old best", ["lime lime lime budget", "ok"])
    for n in range(4):
        _conversation(agent, owner, f"Newer {n}", [f"lime note {n}", "ok"])
    hits = conversations.search(agent.organization_id, owner.pk, "lime")
    assert hits.window_full and _titles(hits) == ["Newer 3", "Newer 2", "Newer 1"]
    text = conversations.render_hits(hits, "lime")
    assert text.startswith("More than 3 messages match 'lime'") and "narrow the query" in text
    narrowed = conversations.search(agent.organization_id, owner.pk, "lime budget")
    assert not narrowed.window_full and _titles(narrowed) == ["Old best"]
    assert conversations.render_hits(narrowed, "lime budget").startswith("1 conversation(s) match")


def test_matched_turns_and_the_passage_count_every_turn_of_a_chosen_conversation(agent, owner, monkeypatch):
    from knowledge import conversations

    monkeypatch.setattr(conversations, "RANK_WINDOW", 2)
    long = _conversation(agent, owner, "Long", ["fig fig fig first", "ok", "fig again"])
    _conversation(agent, owner, "Other", ["fig once"])
    Message.objects.create(conversation=long, role="user", author=owner, content="fig last")
    hits = conversations.search(agent.organization_id, owner.pk, "fig")
    assert hits.window_full
    first = hits[0]
    assert first.title == "Long" and first.matched_turns == 3 and "**fig** **fig** **fig**" in first.passage

"""👍/👎 by an embed's visitor (embeds.services.visitor_feedback, the socket's `feedback` frame): on an answer of their
own thread only, named by its run; stored like a member's (agents.Feedback, no user), shown in Activity and made an
evaluation case like web chat's; rate-limited like the rest of the embed."""

from __future__ import annotations

import pytest
from channels.db import database_sync_to_async

from agents.models import Feedback, Message, Run
from embeds import services
from evals.models import Case
from tests import factories
from tests.embeds.conftest import FRONTEND, SHOP, communicator, next_frame

pytestmark = pytest.mark.django_db(transaction=True)

ALICE = "a1" * 16
BOB = "b0" * 16


def answered_turn(embed, thread: str, text: str = "Do you ship to Poland?") -> Run:
    """A finished turn of `thread`: the visitor's message and the answer, as the runner leaves them."""
    conversation = services.get_or_create_conversation(embed, thread)
    run = Run.objects.create(organization_id=embed.organization_id, agent=embed.agent, surface="embed",
                             version=embed.agent.environments.get(name="production").version, prompt=text,
                             conversation=conversation, status="completed", embed_id=embed.pk)
    Message.objects.create(conversation=conversation, run=run, role="user", content=text)
    Message.objects.create(conversation=conversation, run=run, role="assistant", content="Yes, in three days.")
    return run


async def visitor_socket(embed, visitor: str):
    origin = FRONTEND if embed.kind == "page" else SHOP
    comm = communicator(embed.public_key, origin=origin, visitor=visitor)
    connected, _ = await comm.connect(timeout=3)
    assert connected
    assert (await next_frame(comm))["type"] == "ready"
    history = await next_frame(comm)
    assert history["type"] == "history"
    return comm, history["data"]["messages"]


async def rate(comm, **body) -> dict:
    await comm.send_json_to({"type": "feedback", **body})
    return await next_frame(comm)


def stored() -> list[tuple]:
    return list(Feedback.objects.values_list("run_id", "rating", "comment", "source", "rater", "user_id"))


@pytest.mark.parametrize("kind", ["widget", "page"])
async def test_a_visitor_rates_an_answer_of_their_own_thread_with_a_comment(agent, builder, kind):
    embed = await database_sync_to_async(factories.embed)(
        agent, kind=kind, created_by=builder, **({"allowed_origins": [SHOP]} if kind == "widget" else {}))
    run = await database_sync_to_async(answered_turn)(embed, ALICE)
    comm, history = await visitor_socket(embed, ALICE)
    # The replayed answer names its run (what a rating names) and no rating yet.
    assert history[1]["run_id"] == str(run.pk) and history[1]["feedback"] is None

    saved = await rate(comm, run_id=str(run.pk), rating="down", comment="  It was five days.  ")
    assert saved == {"type": "feedback_saved", "data": {"run_id": str(run.pk), "rating": "down",
                                                         "comment": "It was five days."}}
    assert await database_sync_to_async(stored)() == [(run.pk, "down", "It was five days.", "embed", "visitor", None)]
    # Again replaces it (one rating per visitor and answer), and the thread reopened shows it.
    assert (await rate(comm, run_id=str(run.pk), rating="up"))["data"]["rating"] == "up"
    await comm.disconnect()
    comm, history = await visitor_socket(embed, ALICE)
    assert history[1]["feedback"] == {"rating": "up", "comment": ""}
    # null takes it back.
    assert (await rate(comm, run_id=str(run.pk), rating=None))["data"]["rating"] is None
    assert await database_sync_to_async(stored)() == []
    await comm.disconnect()


async def test_another_visitors_run_is_not_found_and_nothing_is_stored(agent, builder, page):
    alices = await database_sync_to_async(answered_turn)(page, ALICE)
    await database_sync_to_async(answered_turn)(page, BOB)
    comm, _ = await visitor_socket(page, BOB)
    refused = await rate(comm, run_id=str(alices.pk), rating="down", comment="spam")
    assert refused == {"type": "error", "data": {"message": "That answer is not in this conversation.",
                                                 "code": "not_found"}}
    assert await database_sync_to_async(stored)() == []
    # The socket stays open for the visitor's own answers.
    await comm.send_json_to({"type": "feedback", "run_id": "not-a-uuid", "rating": "up"})
    assert (await next_frame(comm))["data"]["code"] == "not_found"
    await comm.disconnect()


async def test_another_organizations_visitor_cannot_rate_this_organizations_answer(agent, builder, page):
    run = await database_sync_to_async(answered_turn)(page, ALICE)

    def their_page():
        other = factories.organization(name="Other Corp")
        return factories.embed(factories.published_agent(other, factories.member(other, "owner"), name="Theirs"),
                               kind="page", created_by=factories.member(other, "builder"))

    theirs = await database_sync_to_async(their_page)()
    # Even with the same continuity key: the thread is this page's, and the run is another organization's.
    comm, _ = await visitor_socket(theirs, ALICE)
    refused = await rate(comm, run_id=str(run.pk), rating="down")
    assert refused["type"] == "error" and refused["data"]["code"] == "not_found"
    assert await database_sync_to_async(stored)() == []
    await comm.disconnect()


async def test_a_bad_rating_or_an_overlong_comment_is_refused(agent, builder, page):
    run = await database_sync_to_async(answered_turn)(page, ALICE)
    comm, _ = await visitor_socket(page, ALICE)
    assert (await rate(comm, run_id=str(run.pk), rating="meh"))["data"]["code"] == "invalid"
    assert (await rate(comm, run_id=str(run.pk), rating="up", comment="x" * 2001))["data"]["code"] == "invalid"
    assert await database_sync_to_async(stored)() == []
    await comm.disconnect()


async def test_ratings_are_rate_limited_like_the_embeds_messages(agent, builder):
    page = await database_sync_to_async(factories.embed)(agent, kind="page", created_by=builder,
                                                          rate_limit_per_minute=2)
    run = await database_sync_to_async(answered_turn)(page, ALICE)
    comm, _ = await visitor_socket(page, ALICE)
    assert (await rate(comm, run_id=str(run.pk), rating="up"))["type"] == "feedback_saved"
    assert (await rate(comm, run_id=str(run.pk), rating="down"))["type"] == "feedback_saved"
    third = await rate(comm, run_id=str(run.pk), rating="up", comment="third")
    assert third["type"] == "error" and third["data"]["code"] == "rate_limited"
    assert await database_sync_to_async(stored)() == [(run.pk, "down", "", "embed", "visitor", None)]
    await comm.disconnect()


def test_a_visitors_thumbs_down_is_in_activity_and_becomes_an_evaluation_case(agent, builder, owner, viewer, page,
                                                                                 client):
    run = answered_turn(page, ALICE)
    message = Message.objects.get(run=run, role="assistant")
    services.visitor_feedback(page, ALICE, None, {"run_id": str(run.pk), "rating": "down", "comment": "Too slow"})
    feedback = Feedback.objects.get()
    assert feedback.message_id == message.pk and feedback.organization_id == page.organization_id
    assert feedback.rated_by == "Visitor"

    client.force_login(owner)
    listed = client.get("/activity/feedback/?rating=down")
    assert listed.status_code == 200
    body = listed.content.decode()
    assert f'data-feedback-row="{feedback.pk}"' in body and "Too slow" in body and "Visitor" in body

    made = client.post(f"/activity/feedback/{feedback.pk}/case")
    assert made.status_code == 302
    case = Case.objects.get()
    assert case.prompt == "Do you ship to Poland?" and "Too slow" in case.checks[0]["label"]
    feedback.refresh_from_db()
    assert feedback.eval_case_id == case.pk

    # A viewer without runs:view sees only their own feedback: not a visitor's.
    client.force_login(viewer)
    assert f'data-feedback-row="{feedback.pk}"' not in client.get("/activity/feedback/").content.decode()

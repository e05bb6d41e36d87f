"""Follow-ups on Telegram and Mattermost (channelbots.follow_ups): after the reply, the steps a separate
model wrote (through the real OpenAI client against the fake server) are posted in the same thread as the
platform's buttons — a Telegram inline keyboard, Mattermost interactive message buttons — and a click (a Telegram
callback_query by webhook or by polling, Mattermost's integration request) is a new message from the clicker,
answered in the thread through channelbots.router, which checks the clicker like a typed message. Forged,
moved and foreign clicks start nothing. End to end: the real routes, Celery worker, runner (main model scripted),
the supervisor's polling session, and the fake platforms."""

from __future__ import annotations

import json
import time

import pytest
from pydantic_ai.models.function import AgentInfo, FunctionModel

from agents.models import Message, Run
from capabilities.follow_ups.models import FollowUp
from capabilities.follow_ups.service import RUN_LABEL
from channelbots.follow_ups import MATTERMOST_ACTION, NOT_THIS_MESSAGE, telegram_data
from channelbots.models import ChannelBot
from channelbots.platforms import client_for
from tests import factories
from tests.channelbots.conftest import bind, wait_until
from tests.channelbots.test_chat_approvals import (
    mattermost_setup,
    post_update,
    press_mattermost,
    run_and_ladder,
    telegram_bot,
)
from tests.fakes.mattermost import fake_mattermost  # noqa: F401  (fixture)
from tests.fakes.openai_server import Reply
from tests.fakes.telegram_api import fake_telegram, telegram_message  # noqa: F401  (fixture)

STEPS = ["Show me refunds", "Track my order"]
FRONTEND = "https://app.example.com"


def echo_model() -> FunctionModel:
    async def stream(messages, info: AgentInfo):
        yield f"You said: {messages[-1].parts[-1].content.split()[-1]}"

    return FunctionModel(stream_function=stream, model_name="scripted")


@pytest.fixture
def next_steps_agent(celery_worker, scripted_model, fake_openai, org, builder):
    helper = factories.model_profile(org, "openai_compatible", "gpt-4o-mini", label="next steps",
                                     api_key="sk-followups-chat-0000", base_url=fake_openai.base_url)
    agent = factories.published_agent(org, builder, name="Support Agent", capabilities=[
        {"id": "follow_ups", "config": {"model_profile_id": str(helper.pk)}}])
    scripted_model(echo_model())
    fake_openai.queue(Reply.text("\n".join(STEPS)))
    return agent


def answers() -> int:
    """The main runs (the follow-up model's own "Next steps" runs left out)."""
    return Run.objects.exclude(prompt=RUN_LABEL).count()


def no_run_named(step: str) -> bool:
    return (not Run.objects.filter(prompt__contains=step).exists()
            and not Message.objects.filter(role="user", content=step).exists())


# ------------------------------------------------------------------ Telegram


def final(message: dict) -> str:
    return message["edits"][-1] if message["edits"] else message["text"]


def telegram_steps(fake, chat="-100"):
    """(message id, message) of the follow-up keyboard in the chat."""
    return wait_until(lambda: next(((mid, m) for (c, mid), m in list(fake.messages.items()) if c == chat
                                    and (m.get("reply_markup") or {}).get("inline_keyboard")), None))


def telegram_answer(fake, text: str, chat="-100"):
    return wait_until(lambda: next(((mid, m) for (c, mid), m in list(fake.messages.items())
                                    if c == chat and final(m) == text), None))


def ask_on_telegram(client, bot, fake, text="@acme_bot hello there", user_id=9):
    question = telegram_message(text, chat_id=-100, chat_type="group", user_id=user_id,
                                entities=[{"type": "mention", "offset": 0, "length": 9}])
    if bot.transport == "webhook":
        assert post_update(client, bot, {"update_id": 1, "message": question}).status_code == 200
    else:
        fake.push(question)
    return question


@pytest.fixture
def telegram(next_steps_agent, org, builder, fake_telegram):  # noqa: F811
    bot = telegram_bot(org, builder, fake_telegram)
    bind(next_steps_agent, bot, builder, org)
    return bot


def test_telegram_posts_the_steps_as_an_inline_keyboard_after_the_reply_in_the_same_thread(
        telegram, client, fake_telegram, fake_openai):  # noqa: F811
    question = ask_on_telegram(client, telegram, fake_telegram)
    message_id, steps = telegram_steps(fake_telegram)
    assert steps["text"] == "Suggested next steps:"
    assert steps["reply"]["message_id"] == question["message_id"]  # in the thread of the question
    keyboard = steps["reply_markup"]["inline_keyboard"]
    assert [[b["text"] for b in row] for row in keyboard] == [[s] for s in STEPS]
    for index, row in enumerate(keyboard):
        data = row[0]["callback_data"]
        assert data.startswith(f"fu:{FollowUp.objects.get().pk}:{index}:") and len(data.encode()) <= 64
    reply_id, reply = telegram_answer(fake_telegram, "You said: there")
    assert reply["reply"]["message_id"] == question["message_id"]
    assert reply_id < message_id  # the buttons are their own message, after the reply's
    # The message reaches the fake before the row records it (the platform's answer comes first): wait for the row.
    follow_up = wait_until(lambda: FollowUp.objects.filter(delivered_to__has_key="message_ref").first())
    assert FollowUp.objects.count() == 1
    assert follow_up.status == "ready" and follow_up.delivered_to["message_ref"] == str(message_id)
    assert follow_up.delivered_to["platform"] == "telegram" and follow_up.delivered_to["chat_id"] == "-100"
    assert "tools" not in fake_openai.chat_requests[-1].json


def test_telegram_a_click_by_webhook_is_a_new_message_from_the_clicker_answered_in_the_thread(
        telegram, client, fake_telegram, fake_openai):  # noqa: F811
    question = ask_on_telegram(client, telegram, fake_telegram)
    message_id, _steps = telegram_steps(fake_telegram)
    follow_up = FollowUp.objects.get()
    fake_openai.queue(Reply.text(""))  # the second answer gets no suggestions
    press = fake_telegram.press(-100, message_id, "Track my order", user_id=31, first_name="Bob")
    assert post_update(client, telegram, press).status_code == 200
    # The callback is answered (the button stops spinning) with the step sent, not as an alert.
    answered = fake_telegram.answers[-1]
    assert answered["callback_query_id"] == press["callback_query"]["id"]
    assert answered["text"] == "Track my order" and not answered["show_alert"]
    _mid, answer = telegram_answer(fake_telegram, "You said: order")
    assert answer["reply"]["message_id"] == question["message_id"]
    turn = wait_until(lambda: Message.objects.filter(role="user", content="Track my order").first())
    assert turn.chat_identity is not None and turn.chat_identity.account_id == "31"
    assert turn.conversation_id == follow_up.conversation_id  # the same thread's conversation
    # Telegram redelivers an update it thinks was lost: the same callback is the same message.
    assert post_update(client, telegram, press).status_code == 200
    wait_until(lambda: Run.objects.filter(prompt__contains="Track my order", status="completed").exists())
    assert Run.objects.filter(surface="telegram", prompt__contains="Track my order").count() == 1


def test_telegram_a_click_by_polling_is_answered_in_the_thread(next_steps_agent, client, org, builder,
                                                               fake_telegram, fake_openai):  # noqa: F811
    bot = telegram_bot(org, builder, fake_telegram, transport="polling")
    bind(next_steps_agent, bot, builder, org)
    stop, thread = run_and_ladder(bot)
    try:
        question = ask_on_telegram(client, bot, fake_telegram)
        message_id, _steps = telegram_steps(fake_telegram)
        fake_openai.queue(Reply.text(""))
        fake_telegram.push_update(fake_telegram.press(-100, message_id, "Show me refunds", user_id=31))
        _mid, answer = telegram_answer(fake_telegram, "You said: refunds")
        wait_until(lambda: fake_telegram.answers)
    finally:
        stop.set()
        thread.join(timeout=30)
    assert answer["reply"]["message_id"] == question["message_id"]
    assert fake_telegram.answers[-1]["text"] == "Show me refunds" and not fake_telegram.answers[-1]["show_alert"]
    turn = Message.objects.get(role="user", content="Show me refunds")
    assert turn.chat_identity.account_id == "31"


def test_telegram_forged_moved_and_foreign_clicks_start_nothing(telegram, client, org, builder, outsider_org,
                                                               outsider, fake_telegram, fake_openai):  # noqa: F811
    ask_on_telegram(client, telegram, fake_telegram)
    message_id, steps = telegram_steps(fake_telegram)
    reply_id, _reply = telegram_answer(fake_telegram, "You said: there")
    follow_up = FollowUp.objects.get()
    real = steps["reply_markup"]["inline_keyboard"][0][0]["callback_data"]
    runs = answers()
    clicks = [
        # A modified client can send any callback_data: without this deployment's signature it is refused.
        fake_telegram.press(-100, message_id, "x", user_id=31, data=f"fu:{follow_up.pk}:0:0000000000000000"),
        # The signature of step 1 on step 0.
        fake_telegram.press(-100, message_id, "x", user_id=31, data=f"fu:{follow_up.pk}:1:{real.split(':')[3]}"),
        # The real button's data, on another message of the thread (the reply).
        fake_telegram.press(-100, reply_id, "x", user_id=31, data=real),
        # Signed for this bot, but no such step.
        fake_telegram.press(-100, message_id, "x", user_id=31,
                            data=telegram_data(client_for(telegram), follow_up.pk, 5)),
    ]
    for click in clicks:
        assert post_update(client, telegram, click).status_code == 200
    # Another organization's bot (its own valid webhook secret) passed the real click.
    foreign = telegram_bot(outsider_org, outsider, fake_telegram)
    assert post_update(client, foreign, fake_telegram.press(-100, message_id, "Show me refunds",
                                                             user_id=31)).status_code == 200
    # Without the webhook secret nothing is read at all.
    unsigned = client.post(f"/api/v1/telegram/{telegram.pk}/webhook", content_type="application/json",
                           data=json.dumps(fake_telegram.press(-100, message_id, "Show me refunds", user_id=31)))
    assert unsigned.status_code == 403
    assert len(fake_telegram.answers) == 5
    assert all(a["show_alert"] and a["text"] == NOT_THIS_MESSAGE for a in fake_telegram.answers)
    # The control: the real button, pressed now, is answered; nothing named by the refused clicks ever ran.
    fake_openai.queue(Reply.text(""))
    post_update(client, telegram, fake_telegram.press(-100, message_id, "Track my order", user_id=31))
    telegram_answer(fake_telegram, "You said: order")
    wait_until(lambda: Run.objects.filter(prompt__contains="Track my order", status="completed").exists())
    assert answers() == runs + 1  # the control's answer only
    assert no_run_named("Show me refunds")
    assert ChannelBot.objects.filter(organization=outsider_org).count() == 1


def test_telegram_a_click_is_checked_like_a_typed_message(telegram, client, fake_telegram):  # noqa: F811
    ask_on_telegram(client, telegram, fake_telegram)
    message_id, _steps = telegram_steps(fake_telegram)
    telegram_answer(fake_telegram, "You said: there")
    # Only the person who asked may speak to the bot now: another member of the group clicks.
    ChannelBot.objects.filter(pk=telegram.pk).update(access_policy={
        "mode": "whitelist", "whitelist": ["9"], "denied_message": "Not for you, sorry."})
    post_update(client, telegram, fake_telegram.press(-100, message_id, "Track my order", user_id=31))
    refusal_id, refusal = telegram_answer(fake_telegram, "Not for you, sorry.")
    assert refusal_id > message_id
    assert no_run_named("Track my order")


# ------------------------------------------------------------------ Mattermost


@pytest.fixture
def mattermost(next_steps_agent, org, builder, fake_mattermost):  # noqa: F811
    return mattermost_setup(org, builder, fake_mattermost, next_steps_agent)


def ask_on_mattermost(client, bot, fake):
    body = {"token": "tok-from-mattermost-1", "channel_id": "town", "post_id": "q1", "user_id": "u-bob",
            "user_name": "bob", "text": "opsbot hello there", "trigger_word": "opsbot"}
    assert client.post(f"/api/v1/mattermost/{bot.pk}/webhook", body).status_code == 200
    return wait_until(lambda: next((p for p in fake.answers("town") if fake.actions_of(p)), None))


def mattermost_answer(fake, text: str):
    return wait_until(lambda: next((p for p in fake.answers("town") if (p["edits"] or [p["message"]])[-1] == text),
                                   None))


def click(client, url: str, body: dict):
    return client.post(url.removeprefix(FRONTEND), data=json.dumps(body), content_type="application/json")


def test_mattermost_posts_the_steps_as_interactive_buttons_after_the_reply_in_the_same_thread(
        mattermost, client, fake_mattermost):  # noqa: F811
    post = ask_on_mattermost(client, mattermost, fake_mattermost)
    assert post["root_id"] == "q1" and post["message"] == "Suggested next steps:"
    actions = fake_mattermost.actions_of(post)
    assert [a["name"] for a in actions] == STEPS
    assert [a["id"] for a in actions] == [f"{MATTERMOST_ACTION}0", f"{MATTERMOST_ACTION}1"]
    assert all(a["id"].isalnum() for a in actions)  # Mattermost drops a click on an id with "_" or "-"
    url = f"{FRONTEND}/api/v1/mattermost/{mattermost.pk}/actions"
    assert {a["integration"]["url"] for a in actions} == {url}
    follow_up = FollowUp.objects.get()
    assert actions[1]["integration"]["context"]["follow_up"] == str(follow_up.pk)
    assert len(actions[1]["integration"]["context"]["signature"]) == 64
    reply = mattermost_answer(fake_mattermost, "You said: there")
    assert reply["root_id"] == "q1"
    assert int(reply["id"].removeprefix("bp")) < int(post["id"].removeprefix("bp"))
    # The post reaches the fake before the row records it (the platform's answer comes first): wait for the row.
    for _ in range(200):
        follow_up.refresh_from_db()
        if follow_up.delivered_to.get("message_ref"):
            break
        time.sleep(0.05)
    assert follow_up.delivered_to["message_ref"] == post["id"] and follow_up.delivered_to["chat_id"] == "town"


def test_mattermost_a_click_is_a_new_message_from_the_clicker_answered_in_the_thread(
        mattermost, client, fake_mattermost, fake_openai):  # noqa: F811
    post = ask_on_mattermost(client, mattermost, fake_mattermost)
    follow_up = FollowUp.objects.get()
    fake_openai.queue(Reply.text(""))
    response = press_mattermost(client, fake_mattermost, post, f"{MATTERMOST_ACTION}1", "u-ada")
    assert response.status_code == 200 and response.json() == {}
    answer = mattermost_answer(fake_mattermost, "You said: order")
    assert answer["root_id"] == "q1"
    turn = wait_until(lambda: Message.objects.filter(role="user", content="Track my order").first())
    assert turn.chat_identity is not None and turn.chat_identity.account_id == "u-ada"
    assert turn.chat_identity.workspace == fake_mattermost.url
    assert turn.conversation_id == follow_up.conversation_id
    wait_until(lambda: Run.objects.filter(prompt__contains="Track my order", status="completed").exists())
    assert Run.objects.filter(surface="mattermost", prompt__contains="Track my order").count() == 1


def test_mattermost_forged_moved_and_foreign_clicks_start_nothing(mattermost, client, org, builder, outsider_org,
                                                                 outsider, fake_mattermost, fake_openai):  # noqa: F811
    post = ask_on_mattermost(client, mattermost, fake_mattermost)
    reply = mattermost_answer(fake_mattermost, "You said: there")
    url, body = fake_mattermost.press(post["id"], f"{MATTERMOST_ACTION}0", user_id="u-ada")
    _url, second = fake_mattermost.press(post["id"], f"{MATTERMOST_ACTION}1", user_id="u-ada")
    runs = answers()
    refused = [
        # Step 0 with step 1's signature.
        {**body, "context": {**body["context"], "signature": second["context"]["signature"]}},
        # No signature at all.
        {**body, "context": {"follow_up": body["context"]["follow_up"], "index": 0}},
        # The real context, sent as if the button were on another post of the thread (the reply).
        {**body, "post_id": reply["id"]},
        # The real context, in another channel.
        {**body, "channel_id": "elsewhere"},
    ]
    for forged in refused:
        response = click(client, url, forged)
        assert response.status_code == 200 and response.json() == {"ephemeral_text": NOT_THIS_MESSAGE}
    # Another organization's bot on the same server, given the real click.
    foreign = mattermost_setup(outsider_org, outsider, fake_mattermost,
                               factories.published_agent(outsider_org, outsider, name="Theirs"))
    moved = click(client, f"/api/v1/mattermost/{foreign.pk}/actions", body)
    assert moved.json() == {"ephemeral_text": NOT_THIS_MESSAGE}
    # The control: the real click on step 1 is answered; nothing named by the refused clicks ever ran.
    fake_openai.queue(Reply.text(""))
    assert click(client, url, second).json() == {}
    mattermost_answer(fake_mattermost, "You said: order")
    wait_until(lambda: Run.objects.filter(prompt__contains="Track my order", status="completed").exists())
    assert answers() == runs + 1  # the control's answer only
    assert no_run_named("Show me refunds")


def test_mattermost_an_approval_card_click_still_reaches_the_approvals(mattermost, client, fake_mattermost):  # noqa: F811
    """A follow-up button's context never passes for an approval decision, and the approval route is untouched:
    a context without `follow_up` is still read as a card's (here, one naming no card)."""
    post = ask_on_mattermost(client, mattermost, fake_mattermost)
    url, body = fake_mattermost.press(post["id"], f"{MATTERMOST_ACTION}0", user_id="u-ada")
    as_approval = {**body, "context": {"approval_id": body["context"]["follow_up"], "decision": "approve",
                                       "signature": body["context"]["signature"]}}
    assert "does not belong to a step waiting here" in click(client, url, as_approval).json()["ephemeral_text"]
    assert no_run_named("Show me refunds")

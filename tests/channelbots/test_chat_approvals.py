"""Approvals decided in the thread: a parked channel run shows the call (tool, arguments as the Approvals page
prints them) with Approve / Reject on Slack (Block Kit, signed interactions), Telegram (inline keyboard,
callback_query by webhook and by polling) and Mattermost (interactive buttons, signed context); only a linked
member who holds approvals:decide in the bot's organization decides; the run resumes and its answer lands in the
same thread; a decision in the console updates the card too. Forged payloads, unlinked and unauthorised clickers,
and another organization's bot change nothing.

End to end: the real routes, the real Celery worker and runner on a scripted model, the fake platforms."""

from __future__ import annotations

import json
import threading

import pytest
from pydantic_ai.messages import ToolReturnPart
from pydantic_ai.models.function import AgentInfo, DeltaToolCall, FunctionModel

from agents.models import Run
from channelbots import services, supervisor
from channelbots.models import ApprovalCard, ChannelBot, ChannelIdentity
from governance.models import Approval
from tests import factories
from tests.channelbots.conftest import SIGNING_SECRET, bind, slack_bot, wait_until
from tests.fakes.mattermost import fake_mattermost  # noqa: F401
from tests.fakes.slack_api import SlackEventSender
from tests.fakes.slack_socket import fake_slack_socket  # noqa: F401  (fixture)
from tests.fakes.telegram_api import fake_telegram, telegram_message  # noqa: F401

# A simple real tool, gated: the chart of Warsaw's hour.
ARGS = {"chart_type": "bar", "title": "Warsaw", "x_values": ["now"], "series": [{"name": "hour", "values": [9]}]}
SHOWN = '"title": "Warsaw"'
APPROVED_ANSWER = "Drew the chart: it is morning in Warsaw."
REFUSED_ANSWER = "I was not allowed to draw the chart."


def gated_model() -> FunctionModel:
    """Asks for a chart (gated); after the decision, answers with what came back."""

    async def stream(messages, info: AgentInfo):
        returns = [p for m in messages for p in getattr(m, "parts", []) if isinstance(p, ToolReturnPart)]
        if not returns:
            yield "Let me check."
            yield {0: DeltaToolCall(name="create_chart", json_args=json.dumps(ARGS), tool_call_id="t1")}
        elif "rejected" in str(returns[-1].content):
            yield REFUSED_ANSWER
        else:
            yield APPROVED_ANSWER

    return FunctionModel(stream_function=stream, model_name="scripted")


@pytest.fixture
def gated_agent(org, builder):
    return factories.published_agent(org, builder, name="Support Agent",
                                     capabilities=[{"id": "charts", "tool_approval": {"create_chart": "required"}}])


def link(org, platform: str, workspace: str, account_id: str, user, name: str = "Ada") -> ChannelIdentity:
    return ChannelIdentity.objects.create(organization=org, platform=platform, workspace=workspace,
                                          account_id=account_id, user=user, display_name=name)


def assert_nothing_changed(approval: Approval) -> None:
    approval.refresh_from_db()
    assert approval.status == "pending" and approval.decided_by_id is None
    assert Run.objects.get(pk=approval.run_id).status == "awaiting_approval"


def run_and_ladder(bot):
    stop = threading.Event()
    thread = threading.Thread(target=supervisor.run_ladder, args=(str(bot.pk), supervisor.session_opener(str(bot.pk)),
                                                                  stop))
    thread.start()
    return stop, thread


# ------------------------------------------------------------------ Slack


@pytest.fixture
def slack(celery_worker, scripted_model, fake_slack, sender, gated_agent, builder, org):
    bind(gated_agent, ChannelBot.objects.get(pk=sender.bot_id), builder, org)
    scripted_model(gated_model())
    return fake_slack


def park_on_slack(fake, sender, *, channel="C1"):
    event = sender.message("<@UBOT> what time is it in Warsaw?", user="U7", channel=channel)
    assert sender.send(event).status_code == 200
    card = wait_until(lambda: next((p for p in fake.answers(channel) if p.buttons()), None))
    wait_until(lambda: Run.objects.filter(status="awaiting_approval").exists())
    # The card's row is written after Slack answered the post: the fake can have it first.
    wait_until(lambda: ApprovalCard.objects.exists())
    return event, card, Approval.objects.get()


def test_slack_the_parked_call_is_shown_in_the_thread_with_buttons_and_the_console_link(slack, sender):
    event, card, approval = park_on_slack(slack, sender)
    run = Run.objects.get()
    assert card.thread_ts == event["ts"]
    assert "create_chart" in card.text and SHOWN in card.text
    assert [b["action_id"] for b in card.buttons()] == ["agenticos_approve", "agenticos_reject"]
    url = f"https://app.example.com/activity/runs/{run.pk}/"
    parked = wait_until(lambda: next((p for p in slack.answers("C1") if "must decide" in p.final), None))
    assert url in parked.final and "/runs/" + str(run.pk) not in parked.final.replace(url, "")
    assert parked.thread_ts == event["ts"]
    assert ApprovalCard.objects.get(approval=approval).message_ref == card.ts


def test_slack_approve_in_the_thread_resumes_the_run_and_the_answer_lands_in_the_same_thread(
        slack, sender, org, admin_user):
    link(org, "slack", "T1", "UADA", admin_user)
    event, card, approval = park_on_slack(slack, sender)
    assert sender.click(card, "agenticos_approve", user="UADA").status_code == 200
    answer = wait_until(lambda: next((p for p in slack.answers("C1") if p.final == APPROVED_ANSWER), None))
    assert answer.thread_ts == event["ts"]
    assert Run.objects.get().status == "completed"
    approval.refresh_from_db()
    assert approval.status == "approved" and approval.decided_by_id == admin_user.pk
    updated = wait_until(lambda: (p := slack.post("C1", card.ts)).edits and p)
    assert updated.final.startswith(f"Approved by {admin_user} in Slack")
    assert not updated.buttons()
    assert slack.ephemerals == []


def test_slack_reject_in_the_thread_and_the_refusal_lands_in_the_thread(slack, sender, org, owner):
    link(org, "slack", "T1", "UOWN", owner)
    event, card, approval = park_on_slack(slack, sender)
    sender.click(card, "agenticos_reject", user="UOWN")
    answer = wait_until(lambda: next((p for p in slack.answers("C1") if p.final == REFUSED_ANSWER), None))
    assert answer.thread_ts == event["ts"]
    approval.refresh_from_db()
    assert approval.status == "rejected"
    wait_until(lambda: slack.post("C1", card.ts).final.startswith(f"Rejected by {owner} in Slack"))


def test_slack_a_decision_in_the_console_updates_the_card_and_the_answer_continues_in_the_thread(
        slack, sender, org, admin_user):
    from django.test import Client

    from agenticos.tenancy import SESSION_KEY

    event, card, approval = park_on_slack(slack, sender)
    console = Client()
    console.force_login(admin_user)
    session = console.session
    session[SESSION_KEY] = str(org.pk)
    session.save()
    response = console.post(f"/approvals/{approval.pk}/decide", {"decision": "approve"},
                            HTTP_ACCEPT="application/json")
    assert response.status_code == 200
    wait_until(lambda: slack.post("C1", card.ts).final.startswith(f"Approved by {admin_user} in the console"))
    assert not slack.post("C1", card.ts).buttons()
    answer = wait_until(lambda: next((p for p in slack.answers("C1") if p.final == APPROVED_ANSWER), None))
    assert answer.thread_ts == event["ts"]


def test_slack_a_forged_interaction_is_refused_and_changes_nothing(slack, sender, org, admin_user):
    link(org, "slack", "T1", "UADA", admin_user)
    _event, card, approval = park_on_slack(slack, sender)
    payload = sender.block_actions(card, "agenticos_approve", user="UADA")
    assert sender.interact(payload, secret="not-the-signing-secret").status_code == 401
    assert sender.interact(payload, timestamp=1_000_000_000).status_code == 401  # a replay from long ago
    unsigned = sender.client.post(f"/api/v1/slack/{sender.bot_id}/interactions", data=b"payload=%7B%7D",
                                  content_type="application/x-www-form-urlencoded")
    assert unsigned.status_code == 401 and unsigned.json()["error"]["code"] == "bad_signature"
    # Signed, but the button's value is moved onto another message of the thread.
    other = next(p for p in slack.answers("C1") if not p.buttons())
    moved = sender.block_actions(other, "agenticos_approve", user="UADA", value=f"{approval.pk}:approve")
    assert sender.interact(moved).status_code == 200
    wait_until(lambda: slack.ephemerals)
    assert "does not belong" in slack.ephemerals[-1]["text"]
    assert_nothing_changed(approval)
    assert not slack.post("C1", card.ts).edits


def test_slack_an_unlinked_clicker_is_told_to_link_and_nothing_changes(slack, sender):
    _event, card, approval = park_on_slack(slack, sender)
    sender.click(card, "agenticos_approve", user="U9")
    wait_until(lambda: slack.ephemerals)
    told = slack.ephemerals[-1]
    assert told["user"] == "U9" and "Link your chat account" in told["text"] and told["channel"] == "C1"
    assert_nothing_changed(approval)
    assert not ChannelIdentity.objects.filter(account_id="U9").exists()  # a refused click leaves no row


@pytest.mark.parametrize("role", ["builder", "member", "viewer"])
def test_slack_a_linked_member_without_approvals_decide_is_refused(slack, sender, org, role):
    person = factories.member(org, role)
    link(org, "slack", "T1", "UWEAK", person)
    _event, card, approval = park_on_slack(slack, sender)
    sender.click(card, "agenticos_approve", user="UWEAK")
    wait_until(lambda: slack.ephemerals)
    assert "cannot decide approvals" in slack.ephemerals[-1]["text"]
    assert_nothing_changed(approval)


def test_slack_outsiders_cannot_decide(slack, sender, org, client, outsider_org, outsider, builder):
    # A chat account of this organization linked to someone who is not a member here.
    link(org, "slack", "T1", "UOUT", outsider)
    _event, card, approval = park_on_slack(slack, sender)
    sender.click(card, "agenticos_approve", user="UOUT")
    wait_until(lambda: slack.ephemerals)
    assert "Link your chat account" in slack.ephemerals[-1]["text"]
    # Another organization's bot, its own valid signature, naming this organization's approval and card.
    foreign_bot = slack_bot(outsider_org, outsider, fake=slack, signing_secret="foreign-signing-secret-000000")
    link(outsider_org, "slack", "T1", "UOUT", outsider)
    foreign = SlackEventSender(client, str(foreign_bot.pk), "foreign-signing-secret-000000")
    assert foreign.interact(foreign.block_actions(card, "agenticos_approve", user="UOUT")).status_code == 200
    wait_until(lambda: len(slack.ephemerals) == 2)
    assert "does not belong" in slack.ephemerals[-1]["text"]
    assert_nothing_changed(approval)


# ------------------------------------------------------------------ Telegram


def telegram_bot(org, user, fake, transport="webhook"):
    bot = services.create_bot(actor=_actor(user, org), data={
        "platform": "telegram", "name": "Tg", "token": fake.token, "api_base_url": fake.url, "transport": transport})
    ChannelBot.objects.filter(pk=bot.pk).update(platform_bot_username=fake.username, platform_bot_user_id="777")
    bot.refresh_from_db()
    return bot


def _actor(user, org):
    from tests.channelbots.conftest import actor

    return actor(user, org)


def post_update(client, bot, update):
    from channelbots.models import CredentialKind

    secret = services.reveal_credentials(bot)[CredentialKind.WEBHOOK_SECRET]
    return client.post(f"/api/v1/telegram/{bot.pk}/webhook", data=json.dumps(update), content_type="application/json",
                       HTTP_X_TELEGRAM_BOT_API_SECRET_TOKEN=secret)


def telegram_card(fake, chat="-100"):
    return wait_until(lambda: next(((mid, m) for (c, mid), m in fake.messages.items()
                                    if c == chat and (m.get("reply_markup") or {}).get("inline_keyboard")), None))


def ask_on_telegram(client, bot, fake):
    question = telegram_message("@acme_bot what time is it in Warsaw?", chat_id=-100, chat_type="group",
                                entities=[{"type": "mention", "offset": 0, "length": 9}])
    if bot.transport == "webhook":
        assert post_update(client, bot, {"update_id": 1, "message": question}).status_code == 200
    else:
        fake.push(question)
    message_id, card = telegram_card(fake)
    wait_until(lambda: Run.objects.filter(status="awaiting_approval").exists())
    return question, message_id, card


def test_telegram_approve_by_inline_keyboard_through_the_webhook(celery_worker, scripted_model, client, org, builder,
                                                                admin_user, fake_telegram, gated_agent):
    bot = telegram_bot(org, builder, fake_telegram)
    bind(gated_agent, bot, builder, org)
    scripted_model(gated_model())
    link(org, "telegram", "", "9", admin_user)
    question, message_id, card = ask_on_telegram(client, bot, fake_telegram)
    assert card["reply"]["message_id"] == question["message_id"]  # in the thread of the question
    assert "create_chart" in card["text"] and SHOWN in card["text"]
    assert "/activity/runs/" in card["text"]
    labels = [b["text"] for row in card["reply_markup"]["inline_keyboard"] for b in row]
    assert labels == ["Approve", "Reject"]
    press = fake_telegram.press(-100, message_id, "Approve", user_id=9)
    assert post_update(client, bot, press).status_code == 200
    assert fake_telegram.answers[-1]["callback_query_id"] == press["callback_query"]["id"]
    assert not fake_telegram.answers[-1]["show_alert"]
    wait_until(lambda: any(m["edits"][-1:] == [APPROVED_ANSWER]
                           and (m["reply"] or {}).get("message_id") == question["message_id"]
                           for m in fake_telegram.sent("-100")))
    updated = wait_until(lambda: (m := fake_telegram.message(-100, message_id))["edits"] and m)
    assert updated["edits"][-1].startswith(f"Approved by {admin_user} in Telegram")
    assert updated["reply_markup"] == {"inline_keyboard": []}


def test_telegram_forged_and_unlinked_clicks_change_nothing(celery_worker, scripted_model, client, org, builder,
                                                          admin_user, fake_telegram, gated_agent):
    bot = telegram_bot(org, builder, fake_telegram)
    bind(gated_agent, bot, builder, org)
    scripted_model(gated_model())
    link(org, "telegram", "", "9", admin_user)
    _question, message_id, card = ask_on_telegram(client, bot, fake_telegram)
    approval = Approval.objects.get()
    # A modified client can send any callback_data: one without our signature is refused.
    forged = fake_telegram.press(-100, message_id, "Approve", user_id=9,
                                 data=f"ap:{approval.pk.hex}:a:0000000000000000")
    post_update(client, bot, forged)
    assert fake_telegram.answers[-1]["show_alert"] and "does not belong" in fake_telegram.answers[-1]["text"]
    # The real button, pressed by someone whose account is not linked.
    post_update(client, bot, fake_telegram.press(-100, message_id, "Approve", user_id=31))
    assert "Link your chat account" in fake_telegram.answers[-1]["text"]
    # Without the webhook secret nothing is read at all.
    unsigned = client.post(f"/api/v1/telegram/{bot.pk}/webhook", content_type="application/json",
                           data=json.dumps(fake_telegram.press(-100, message_id, "Approve", user_id=9)))
    assert unsigned.status_code == 403
    assert len(fake_telegram.answers) == 2
    assert_nothing_changed(approval)
    assert not fake_telegram.message(-100, message_id)["edits"]


def test_telegram_reject_through_polling_and_the_refusal_lands_in_the_thread(celery_worker, scripted_model, client,
                                                                           org, builder, owner, fake_telegram,
                                                                           gated_agent):
    bot = telegram_bot(org, builder, fake_telegram, transport="polling")
    bind(gated_agent, bot, builder, org)
    scripted_model(gated_model())
    link(org, "telegram", "", "9", owner)
    stop, thread = run_and_ladder(bot)
    try:
        question, message_id, _card = ask_on_telegram(client, bot, fake_telegram)
        fake_telegram.push_update(fake_telegram.press(-100, message_id, "Reject", user_id=9))
        wait_until(lambda: any(m["edits"][-1:] == [REFUSED_ANSWER] for m in fake_telegram.sent("-100")))
        wait_until(lambda: fake_telegram.message(-100, message_id)["edits"][-1:] != [])
    finally:
        stop.set()
        thread.join(timeout=30)
    assert Approval.objects.get().status == "rejected"
    assert fake_telegram.message(-100, message_id)["edits"][-1].startswith(f"Rejected by {owner} in Telegram")
    webhook_calls = [p for name, p in fake_telegram.calls if name == "getUpdates"]
    assert webhook_calls and all("callback_query" in p["allowed_updates"] for p in webhook_calls)


# ------------------------------------------------------------------ Mattermost


def mattermost_setup(org, builder, fake, agent):
    bot = services.create_bot(actor=_actor(builder, org), data={
        "platform": "mattermost", "name": "Ops", "token": fake.token, "api_base_url": fake.url,
        "transport": "webhook", "webhook_secret": "tok-from-mattermost-1"})
    bind(agent, bot, builder, org)
    return bot


def ask_on_mattermost(client, bot, fake):
    body = {"token": "tok-from-mattermost-1", "channel_id": "town", "post_id": "q1", "user_id": "u-bob",
            "user_name": "bob", "text": "opsbot what time is it in Warsaw?", "trigger_word": "opsbot"}
    assert client.post(f"/api/v1/mattermost/{bot.pk}/webhook", body).status_code == 200
    card = wait_until(lambda: next((p for p in fake.answers("town") if fake.actions_of(p)), None))
    wait_until(lambda: Run.objects.filter(status="awaiting_approval").exists())
    return card


def press_mattermost(client, fake, card, action, user_id, **extra):
    url, body = fake.press(card["id"], action, user_id=user_id)
    body.update(extra)
    path = url.removeprefix("https://app.example.com")
    return client.post(path, data=json.dumps(body), content_type="application/json")


def test_mattermost_approve_with_the_interactive_button_and_the_answer_lands_in_the_thread(
        celery_worker, scripted_model, client, org, builder, admin_user, fake_mattermost, gated_agent):
    bot = mattermost_setup(org, builder, fake_mattermost, gated_agent)
    scripted_model(gated_model())
    link(org, "mattermost", fake_mattermost.url, "u-ada", admin_user)
    card = ask_on_mattermost(client, bot, fake_mattermost)
    assert card["root_id"] == "q1" and "create_chart" in card["message"]
    attachment = card["props"]["attachments"][0]
    assert SHOWN in attachment["text"] and "/activity/runs/" in attachment["text"]
    assert [a["id"] for a in attachment["actions"]] == ["approve", "reject"]
    assert attachment["actions"][0]["integration"]["url"] == f"https://app.example.com/api/v1/mattermost/{bot.pk}/actions"
    response = press_mattermost(client, fake_mattermost, card, "approve", "u-ada")
    assert response.status_code == 200 and response.json() == {}
    wait_until(lambda: any(p["edits"][-1:] == [APPROVED_ANSWER] and p["root_id"] == "q1"
                           for p in fake_mattermost.answers("town")))
    updated = wait_until(lambda: (p := fake_mattermost.posts[card["id"]])["edits"] and p)
    assert updated["edits"][-1].startswith(f"Approved by {admin_user} in Mattermost")
    assert not fake_mattermost.actions_of(updated)


def test_mattermost_reject_and_refused_clicks(celery_worker, scripted_model, client, org, builder, owner, member,
                                             fake_mattermost, gated_agent):
    bot = mattermost_setup(org, builder, fake_mattermost, gated_agent)
    scripted_model(gated_model())
    link(org, "mattermost", fake_mattermost.url, "u-own", owner)
    link(org, "mattermost", fake_mattermost.url, "u-mem", member)
    card = ask_on_mattermost(client, bot, fake_mattermost)
    approval = Approval.objects.get()
    # A forged context: the approve decision with the reject button's signature.
    url, body = fake_mattermost.press(card["id"], "reject", user_id="u-own")
    forged = {**body, "context": {**body["context"], "decision": "approve"}}
    refused = client.post(url.removeprefix("https://app.example.com"), data=json.dumps(forged),
                          content_type="application/json")
    assert "does not belong" in refused.json()["ephemeral_text"]
    no_context = press_mattermost(client, fake_mattermost, card, "approve", "u-own", context={})
    assert "does not belong" in no_context.json()["ephemeral_text"]
    assert "Link your chat account" in press_mattermost(client, fake_mattermost, card, "approve",
                                                        "u-stranger").json()["ephemeral_text"]
    assert "cannot decide" in press_mattermost(client, fake_mattermost, card, "approve", "u-mem").json()["ephemeral_text"]
    assert_nothing_changed(approval)
    assert not fake_mattermost.posts[card["id"]]["edits"]
    late_url, late_approve = fake_mattermost.press(card["id"], "approve", user_id="u-own")  # kept for after
    # The real reject button, by the owner.
    assert press_mattermost(client, fake_mattermost, card, "reject", "u-own").json() == {}
    wait_until(lambda: any(p["edits"][-1:] == [REFUSED_ANSWER] and p["root_id"] == "q1"
                           for p in fake_mattermost.answers("town")))
    again = client.post(late_url.removeprefix("https://app.example.com"), data=json.dumps(late_approve),
                        content_type="application/json").json()
    assert "decided already" in again["ephemeral_text"]
    approval.refresh_from_db()
    assert approval.status == "rejected"


def test_signing_secret_is_required_for_slack_interactions(client, org, builder, fake_slack):  # noqa: F811
    bot = slack_bot(org, builder, fake=fake_slack, signing_secret=None)
    sender = SlackEventSender(client, str(bot.pk), SIGNING_SECRET)
    response = sender.interact({"type": "block_actions", "actions": []})
    assert response.status_code == 403 and response.json()["error"]["code"] == "not_configured"


def test_slack_socket_mode_clicks_arrive_as_interactive_envelopes_and_decide(celery_worker, scripted_model, org,
                                                                           builder, admin_user, gated_agent,
                                                                           fake_slack_socket):  # noqa: F811
    from tests.channelbots.test_slack_socket_mode import Ladder, callback, mention, socket_bot

    fake = fake_slack_socket
    bot = socket_bot(org, builder, fake)
    bind(gated_agent, bot, builder, org)
    scripted_model(gated_model())
    link(org, "slack", "T1", "UADA", admin_user)
    with Ladder(bot):
        assert fake.wait_connections(1)
        fake.send_event(callback(mention("<@UBOT> what time is it in Warsaw?", ts="1764000200.000100")))
        card = wait_until(lambda: next((p for p in fake.answers("C1") if p.buttons()), None))
        payload = SlackEventSender(None, str(bot.pk), "").block_actions(card, "agenticos_approve", user="UADA")
        envelope = {"envelope_id": "env-click-1", "type": "interactive", "accepts_response_payload": True,
                    "payload": payload}
        fake._broadcast(json.dumps(envelope))
        wait_until(lambda: fake.acked("env-click-1"))
        answer = wait_until(lambda: next((p for p in fake.answers("C1") if p.final == APPROVED_ANSWER), None))
        assert answer.thread_ts == "1764000200.000100"
    assert Approval.objects.get().status == "approved"


def test_a_slack_bot_row_prints_its_interactivity_url_and_others_none(org, builder, api_as, fake_slack,  # noqa: F811
                                                                      fake_telegram):  # noqa: F811
    bot = slack_bot(org, builder, fake=fake_slack)
    tg = telegram_bot(org, builder, fake_telegram)
    client = api_as(builder, org)
    body = client.get(f"/api/v1/bots/{bot.pk}").json()
    assert body["interactions_url"] == f"https://app.example.com/api/v1/slack/{bot.pk}/interactions"
    assert client.get(f"/api/v1/bots/{tg.pk}").json()["interactions_url"] is None


# ------------------------------------------------------------------ a decision in the console, on every platform


def decide_in_console(org, user, approval, decision="approve"):
    from django.test import Client

    from agenticos.tenancy import SESSION_KEY

    console = Client()
    console.force_login(user)
    session = console.session
    session[SESSION_KEY] = str(org.pk)
    session.save()
    response = console.post(f"/approvals/{approval.pk}/decide", {"decision": decision},
                            HTTP_ACCEPT="application/json")
    assert response.status_code == 200


def test_telegram_a_decision_in_the_console_updates_the_card_and_the_answer_lands_in_the_thread(
        celery_worker, scripted_model, client, org, builder, admin_user, fake_telegram, gated_agent):
    bot = telegram_bot(org, builder, fake_telegram)
    bind(gated_agent, bot, builder, org)
    scripted_model(gated_model())
    question, message_id, _card = ask_on_telegram(client, bot, fake_telegram)
    decide_in_console(org, admin_user, Approval.objects.get())
    updated = wait_until(lambda: (m := fake_telegram.message(-100, message_id))["edits"] and m)
    assert updated["edits"][-1].startswith(f"Approved by {admin_user} in the console")
    assert updated["reply_markup"] == {"inline_keyboard": []}
    wait_until(lambda: any(m["edits"][-1:] == [APPROVED_ANSWER]
                           and (m["reply"] or {}).get("message_id") == question["message_id"]
                           for m in fake_telegram.sent("-100")))
    assert Run.objects.get().status == "completed"


def test_mattermost_a_rejection_in_the_console_updates_the_card_and_the_refusal_lands_in_the_thread(
        celery_worker, scripted_model, client, org, builder, owner, fake_mattermost, gated_agent):
    bot = mattermost_setup(org, builder, fake_mattermost, gated_agent)
    scripted_model(gated_model())
    card = ask_on_mattermost(client, bot, fake_mattermost)
    decide_in_console(org, owner, Approval.objects.get(), decision="reject")
    updated = wait_until(lambda: (p := fake_mattermost.posts[card["id"]])["edits"] and p)
    assert updated["edits"][-1].startswith(f"Rejected by {owner} in the console")
    assert not fake_mattermost.actions_of(updated)
    wait_until(lambda: any(p["edits"][-1:] == [REFUSED_ANSWER] and p["root_id"] == "q1"
                           for p in fake_mattermost.answers("town")))
    assert Approval.objects.get().status == "rejected"

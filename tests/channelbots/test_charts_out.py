"""Charts out: a chart the agent drew this turn goes to the chat as a PNG rendered server-side (Slack through
files.getUploadURLExternal + completeUploadExternal, Telegram sendPhoto, Mattermost POST /files + a post
carrying the file id), in the thread of the answer; where the image cannot be posted, its numbers as a table."""

from __future__ import annotations

import io
import json

import pytest
from pydantic_ai.messages import ToolReturnPart
from pydantic_ai.models.function import AgentInfo, DeltaToolCall, FunctionModel

from agents.models import Run, ToolCall
from channelbots import charts
from channelbots.platforms import client_for
from tests import factories
from tests.channelbots.conftest import actor, bind, slack_bot, wait_until
from tests.channelbots.test_telegram import telegram_bot
from tests.fakes.mattermost import fake_mattermost  # noqa: F401  (fixture)
from tests.fakes.slack_api import SlackEventSender
from tests.fakes.telegram_api import fake_telegram, telegram_message  # noqa: F401  (fixture)

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
SALES = {"kind": "chart", "version": 1, "chart_type": "bar", "title": "Quarterly sales", "x_label": "Quarter",
         "y_label": "EUR", "x_values": ["Q1", "Q2", "Q3"],
         "series": [{"name": "2025", "values": [1200, 3400.5, 0]}, {"name": "2026", "values": [15000, -2, 7]}]}
CHART_ARGS = {"chart_type": "line", "title": "Signups per day", "x_values": ["Mon", "Tue", "Wed"],
              "series": [{"name": "signups", "values": [3, 8, 5]}]}


def decoded(png: bytes):
    from matplotlib.image import imread

    return imread(io.BytesIO(png), format="png")


@pytest.mark.parametrize("chart_type", ["line", "bar", "area", "scatter", "pie"])
def test_every_chart_type_the_capability_accepts_renders_to_a_png(chart_type):
    spec = {**SALES, "chart_type": chart_type}
    if chart_type == "pie":
        spec["series"] = [{"name": "share", "values": [1, 2, 3]}]
    png = charts.render_png(spec)
    assert png.startswith(PNG_MAGIC)
    height, width = decoded(png).shape[:2]
    assert (width, height) == (960, 540)


def test_numeric_axes_many_points_and_an_all_zero_pie_still_render():
    many = {**SALES, "chart_type": "line", "x_values": [float(i) for i in range(500)],
            "series": [{"name": "y", "values": [i * 0.5 for i in range(500)]}]}
    assert charts.render_png(many).startswith(PNG_MAGIC)
    empty_pie = {**SALES, "chart_type": "pie", "series": [{"name": "s", "values": [0, 0, 0]}]}
    assert charts.render_png(empty_pie).startswith(PNG_MAGIC)


def test_the_table_carries_every_number_under_its_series():
    text = charts.table_text(SALES)
    assert text.splitlines() == [
        "Quarterly sales (bar chart)",
        "```",
        "Quarter    2025    2026",
        "-------  ------  ------",
        "Q1         1200  15,000",
        "Q2       3400.5      -2",
        "Q3            0       7",
        "```",
    ]
    assert "```" not in charts.table_text(SALES, fenced=False)


def test_a_long_table_is_cut_with_a_count_of_what_was_left_out():
    spec = {**SALES, "x_values": list(range(100)), "series": [{"name": "n", "values": list(range(100))}]}
    assert charts.table_text(spec).splitlines()[-2] == f"… {100 - charts.TABLE_ROWS} more rows"


# ------------------------------------------------------------------ end to end on Slack


def chart_then_answer_model(*charts_args: dict) -> FunctionModel:
    async def stream(messages, info: AgentInfo):
        if any(isinstance(p, ToolReturnPart) for p in getattr(messages[-1], "parts", [])):
            yield "Here is the chart."
            return
        for i, args in enumerate(charts_args):
            yield {i: DeltaToolCall(name="create_chart", json_args=json.dumps(args), tool_call_id=f"call-{i}")}

    return FunctionModel(stream_function=stream, model_name="scripted")


@pytest.fixture
def charts_agent(org, builder):
    return factories.published_agent(org, builder, name="Analyst", capabilities=[{"id": "charts"}])


def test_a_chart_drawn_on_slack_is_uploaded_as_a_png_in_the_answer_thread(celery_worker, scripted_model, client, org,
                                                                         builder, charts_agent, fake_slack):
    bot = slack_bot(org, builder, fake=fake_slack)
    bind(charts_agent, bot, builder, org)
    sender = SlackEventSender(client, str(bot.pk), "8f742231b10e8888abcd99yyyzzz85a5")
    scripted_model(chart_then_answer_model(CHART_ARGS))
    event = sender.message("<@UBOT> chart the signups", channel="C1")
    assert sender.send(event).status_code == 200
    wait_until(lambda: fake_slack.called("files.completeUploadExternal"))
    complete = fake_slack.called("files.completeUploadExternal")[0]
    assert complete["channel_id"] == "C1" and complete["thread_ts"] == event["ts"]
    files = json.loads(complete["files"]) if isinstance(complete["files"], str) else complete["files"]
    assert files[0]["title"] == "signups-per-day.png"
    asked = fake_slack.called("files.getUploadURLExternal")[0]
    assert asked["filename"] == "signups-per-day.png"
    assert len(fake_slack.uploads) == 1 and PNG_MAGIC in fake_slack.uploads[0]["bytes"]
    assert [p.final for p in fake_slack.answers("C1")] == ["Here is the chart."]  # the answer text, no table
    assert ToolCall.objects.get(tool_name="create_chart").run.surface == "slack"


def test_without_the_files_scope_slack_gets_the_chart_as_a_table_in_the_thread(celery_worker, scripted_model, client,
                                                                              org, builder, charts_agent, fake_slack):
    fake_slack.upload_error = "missing_scope"
    bot = slack_bot(org, builder, fake=fake_slack)
    bind(charts_agent, bot, builder, org)
    sender = SlackEventSender(client, str(bot.pk), "8f742231b10e8888abcd99yyyzzz85a5")
    scripted_model(chart_then_answer_model(CHART_ARGS))
    event = sender.message("<@UBOT> chart the signups", channel="C1")
    sender.send(event)
    table = wait_until(lambda: next((p for p in fake_slack.answers("C1") if "(line chart)" in p.final), None))
    assert table.thread_ts == event["ts"]
    assert "Tue" in table.final and "signups" in table.final and "8" in table.final
    assert fake_slack.uploads == []
    assert Run.objects.get().status == "completed"


# ------------------------------------------------------------------ per platform, real clients against the fakes


@pytest.fixture
def chart_run(org, builder, charts_agent):
    """A finished run with two charts drawn, one failed call and one unrelated tool call."""
    from agents.models import AgentVersion

    version = AgentVersion.objects.filter(agent=charts_agent).first()
    run = Run.objects.create(organization=org, agent=charts_agent, version=version, user=builder, surface="telegram",
                             status="completed")
    ToolCall.objects.create(run=run, tool_call_id="a", tool_name="create_chart", status="ok", result=SALES)
    ToolCall.objects.create(run=run, tool_call_id="b", tool_name="create_chart", status="error", result="retry")
    ToolCall.objects.create(run=run, tool_call_id="c", tool_name="run_python", status="ok",
                            result={"kind": "chart"})
    ToolCall.objects.create(run=run, tool_call_id="d", tool_name="create_chart", status="ok",
                            result={**SALES, "chart_type": "pie", "title": "Share",
                                    "series": [{"name": "s", "values": [1, 2, 3]}]})
    return run


@pytest.mark.django_db
def test_telegram_gets_each_chart_as_a_photo_replying_to_the_question(chart_run, org, builder, fake_telegram):
    bot = telegram_bot(org, builder, fake_telegram)
    assert charts.deliver(client_for(bot), "-100", "55", chart_run.pk) == ["image", "image"]
    assert [(m["method"], m["chat_id"], m["reply_to"], m["name"], m["mime"]) for m in fake_telegram.media] == [
        ("sendPhoto", "-100", "55", "quarterly-sales.png", "image/png"),
        ("sendPhoto", "-100", "55", "share-2.png", "image/png"),
    ]
    assert all(m["bytes"].startswith(PNG_MAGIC) for m in fake_telegram.media)


@pytest.mark.django_db
def test_mattermost_gets_the_chart_as_a_file_post_in_the_thread(chart_run, org, builder, fake_mattermost):
    from channelbots import services

    bot = services.create_bot(actor=actor(builder, org), data={
        "platform": "mattermost", "name": "Ops", "token": fake_mattermost.token, "api_base_url": fake_mattermost.url})
    assert charts.deliver(client_for(bot), "town", "root1", chart_run.pk) == ["image", "image"]
    posts = fake_mattermost.answers("town")
    assert [p["root_id"] for p in posts] == ["root1", "root1"]
    uploads = [fake_mattermost.uploads[p["file_ids"][0]] for p in posts]
    assert [u["name"] for u in uploads] == ["quarterly-sales.png", "share-2.png"]
    assert all(u["mime"] == "image/png" and u["bytes"].startswith(PNG_MAGIC) for u in uploads)


@pytest.mark.django_db
def test_without_a_renderer_or_an_upload_the_numbers_go_out_as_text(chart_run, org, builder, fake_telegram,
                                                                     monkeypatch):
    bot = telegram_bot(org, builder, fake_telegram)

    def missing(spec):
        raise charts.RendererMissing("matplotlib is not installed")

    monkeypatch.setattr(charts, "render_png", missing)
    assert charts.deliver(client_for(bot), "-100", "55", chart_run.pk) == ["table", "table"]
    texts = [m["text"] for m in fake_telegram.sent("-100")]
    assert texts[0].startswith("Quarterly sales (bar chart)\nQuarter") and "```" not in texts[0]
    assert "15,000" in texts[0] and texts[1].startswith("Share (pie chart)")
    assert fake_telegram.media == []


@pytest.mark.django_db
def test_more_than_three_charts_post_three_and_name_the_rest(chart_run, org, builder, fake_telegram):
    for i in range(3):
        ToolCall.objects.create(run=chart_run, tool_call_id=f"x{i}", tool_name="create_chart", status="ok",
                                result={**SALES, "title": f"Extra {i}"})
    bot = telegram_bot(org, builder, fake_telegram)
    assert len(charts.deliver(client_for(bot), "-100", "55", chart_run.pk)) == 3
    assert len(fake_telegram.media) == 3
    assert [m["text"] for m in fake_telegram.sent("-100")] == [
        "2 more charts are in the web console: Extra 1, Extra 2."]


@pytest.mark.django_db
def test_charts_of_another_run_are_never_posted(chart_run, org, builder, charts_agent, fake_telegram):
    other_org = factories.organization(name="Outsider")
    outsider = factories.member(other_org, "builder")
    other_agent = factories.published_agent(other_org, outsider, name="Theirs", capabilities=[{"id": "charts"}])
    other_run = Run.objects.create(organization=other_org, agent=other_agent, version=other_agent.versions.first(),
                                   user=outsider, surface="slack", status="completed")
    ToolCall.objects.create(run=other_run, tool_call_id="z", tool_name="create_chart", status="ok",
                            result={**SALES, "title": "Their secret numbers"})
    assert [c["title"] for c in charts.charts_of_run(chart_run.pk)] == ["Quarterly sales", "Share"]

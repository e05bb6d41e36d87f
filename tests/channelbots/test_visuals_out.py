"""Visuals out: a drawing the agent made this turn goes to the chat as a PNG rendered server-side in headless
Debian chromium, inside the visuals' sandbox (no network, no reach into the page around it); where it cannot be
rendered or the platform refuses the upload, its title with the console link, in the thread of the answer."""

from __future__ import annotations

import io
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from pydantic_ai.messages import ToolReturnPart
from pydantic_ai.models.function import AgentInfo, DeltaToolCall, FunctionModel

from agents.models import Run, ToolCall
from channelbots import visuals_out
from channelbots.approvals import run_url
from channelbots.platforms import client_for
from tests import factories
from tests.channelbots.conftest import actor, bind, slack_bot, wait_until
from tests.channelbots.test_telegram import telegram_bot
from tests.fakes.mattermost import fake_mattermost  # noqa: F401  (fixture)
from tests.fakes.slack_api import SlackEventSender
from tests.fakes.telegram_api import fake_telegram  # noqa: F401  (fixture)

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
BLUE_BOX = ('<svg xmlns="http://www.w3.org/2000/svg" width="300" height="200">'
            '<rect width="300" height="200" fill="#2f6fde"/></svg>')
FLOW = "graph TD\nA[Order] --> B[Pay]\nB --> C[Ship]\n"

needs_chromium = pytest.mark.skipif(not __import__("os").path.exists(visuals_out.CHROMIUM),
                                    reason="Debian chromium is not installed (make browser)")


def pixels(png: bytes):
    from matplotlib.image import imread

    return imread(io.BytesIO(png), format="png")


def rgb(png: bytes, x: int, y: int) -> tuple[int, int, int]:
    r, g, b = pixels(png)[y, x][:3]
    return round(float(r) * 255), round(float(g) * 255), round(float(b) * 255)


def visual(kind: str, content: str, title: str = "Drawing", images: dict | None = None) -> visuals_out.Visual:
    return visuals_out.Visual("v1", kind, title, content, images or {})


# ------------------------------------------------------------------ rendering, in the sandbox


@needs_chromium
def test_an_svg_and_a_mermaid_flow_render_to_pngs_of_the_page_width():
    svg_png, flow_png = visuals_out.render_pngs([visual("svg", BLUE_BOX), visual("mermaid", FLOW)])
    assert svg_png is not None and svg_png.startswith(PNG_MAGIC)
    height, width = pixels(svg_png).shape[:2]
    assert width == visuals_out.WIDTH and height >= 200
    assert rgb(svg_png, 20, 20) == (0x2F, 0x6F, 0xDE)  # the drawing itself, not an empty frame
    assert rgb(svg_png, 600, 20) == (255, 255, 255)
    assert flow_png is not None
    image = pixels(flow_png)
    assert (image[..., :3] < 0.5).any(), "the flow's text and arrows are drawn"


@needs_chromium
def test_an_image_the_visual_carries_is_drawn_from_its_data_uri():
    from PIL import Image as PILImage

    buffer = io.BytesIO()
    PILImage.new("RGB", (40, 40), (0, 160, 0)).save(buffer, format="PNG")
    import base64

    uri = "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode()
    png = visuals_out.render_pngs([visual("html", '<img src="{{image:leaf}}" width="40" height="40">',
                                          images={"leaf": uri})])[0]
    assert png is not None and rgb(png, 10, 10) == (0, 160, 0)


@pytest.fixture
def listener():
    """A local server that records any request: a drawing must never reach it."""
    hits: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802
            hits.append(self.path)
            self.send_response(200)
            self.end_headers()

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", hits
    finally:
        server.shutdown()
        server.server_close()


@needs_chromium
def test_a_drawing_reaches_neither_the_network_nor_the_page_around_it(listener):
    url, hits = listener
    # Green when every escape failed, red when any worked.
    drawing = (
        '<div id="out" style="width:200px;height:200px;background:rgb(0,128,0)"></div>'
        f'<img src="{url}/pixel.png"><link rel="stylesheet" href="{url}/style.css">'
        "<script>"
        "var escaped = false;"
        "try { parent.document.body.innerHTML = 'taken'; escaped = true; } catch (e) {}"
        "try { if (window.top.location.href) escaped = true; } catch (e) {}"
        f"fetch('{url}/fetch').then(function () {{ document.getElementById('out').style.background = 'red'; }},"
        "  function () {});"
        f"var x = new XMLHttpRequest(); try {{ x.open('GET', '{url}/xhr'); x.send(); }} catch (e) {{}}"
        f"try {{ new WebSocket('{url.replace('http', 'ws')}/ws'); }} catch (e) {{}}"
        "if (escaped) document.getElementById('out').style.background = 'red';"
        "</script>")
    png = visuals_out.render_pngs([visual("html", drawing)])[0]
    assert png is not None
    assert rgb(png, 50, 50) == (0, 128, 0)
    assert hits == []


@needs_chromium
def test_a_drawing_that_never_finishes_is_none_and_the_next_one_still_renders(monkeypatch):
    monkeypatch.setattr(visuals_out, "RENDER_TIMEOUT_MS", 3000)
    stuck, fine = visuals_out.render_pngs([visual("html", "<script>while (true) {}</script>"),
                                           visual("svg", BLUE_BOX)])
    assert stuck is None
    assert fine is not None and rgb(fine, 20, 20) == (0x2F, 0x6F, 0xDE)


# ------------------------------------------------------------------ which visuals a run drew


@pytest.fixture
def visuals_agent(org, builder):
    return factories.published_agent(org, builder, name="Explainer", capabilities=[{"id": "visuals"}])


def drawn(run, call_id: str, title: str, content: str, kind: str = "svg") -> ToolCall:
    return ToolCall.objects.create(run=run, tool_call_id=call_id, tool_name="draw", status="ok",
                                   args={"kind": kind, "title": title, "content": content},
                                   result={"kind": "visual", "visual_id": call_id, "visual_kind": kind,
                                           "title": title, "images": {}, "checked": False, "errors": []})


@pytest.fixture
def visual_run(org, builder, visuals_agent):
    run = Run.objects.create(organization=org, agent=visuals_agent, version=visuals_agent.versions.first(),
                             user=builder, surface="telegram", status="completed")
    drawn(run, "d1", "Order flow", FLOW, kind="mermaid")
    drawn(run, "d2", "Blue box", BLUE_BOX.replace("#2f6fde", "#ff0000"))
    ToolCall.objects.create(run=run, tool_call_id="r1", tool_name="revise_visual", status="ok",
                            args={"visual_id": "d2", "edits": [{"old_text": "#ff0000", "new_text": "#2f6fde"}]},
                            result={"kind": "visual", "visual_id": "r1", "visual_kind": "svg", "title": "Blue box",
                                    "images": {}, "content": BLUE_BOX, "revision_of": "d2", "checked": False,
                                    "errors": []})
    ToolCall.objects.create(run=run, tool_call_id="bad", tool_name="draw", status="error", result="retry")
    ToolCall.objects.create(run=run, tool_call_id="c", tool_name="create_chart", status="ok",
                            result={"kind": "visual", "visual_kind": "svg"})
    return run


@pytest.mark.django_db
def test_a_run_s_visuals_in_order_a_revised_one_giving_way_to_its_revision(visual_run, org, builder):
    outsider_org = factories.organization(name="Outsider")
    outsider = factories.member(outsider_org, "builder")
    theirs = factories.published_agent(outsider_org, outsider, name="Theirs", capabilities=[{"id": "visuals"}])
    other = Run.objects.create(organization=outsider_org, agent=theirs, version=theirs.versions.first(),
                               user=outsider, surface="slack", status="completed")
    drawn(other, "z", "Their secret map", BLUE_BOX)
    found = visuals_out.visuals_of_run(visual_run.pk)
    assert [(v.visual_id, v.kind, v.title) for v in found] == [("d1", "mermaid", "Order flow"),
                                                                ("r1", "svg", "Blue box")]
    assert found[1].content == BLUE_BOX


# ------------------------------------------------------------------ per platform, real clients against the fakes


@needs_chromium
@pytest.mark.django_db
def test_telegram_gets_each_visual_as_a_photo_replying_to_the_question(visual_run, org, builder, fake_telegram):
    bot = telegram_bot(org, builder, fake_telegram)
    assert visuals_out.deliver(client_for(bot), "-100", "55", visual_run.pk) == ["image", "image"]
    assert [(m["method"], m["chat_id"], m["reply_to"], m["name"], m["mime"]) for m in fake_telegram.media] == [
        ("sendPhoto", "-100", "55", "order-flow.png", "image/png"),
        ("sendPhoto", "-100", "55", "blue-box-2.png", "image/png"),
    ]
    assert rgb(fake_telegram.media[1]["bytes"], 20, 20) == (0x2F, 0x6F, 0xDE)  # the revision, not the red draft


@needs_chromium
@pytest.mark.django_db
def test_mattermost_gets_the_visual_as_a_file_post_in_the_thread(visual_run, org, builder, fake_mattermost):
    from channelbots import services

    bot = services.create_bot(actor=actor(builder, org), data={
        "platform": "mattermost", "name": "Ops", "token": fake_mattermost.token, "api_base_url": fake_mattermost.url})
    assert visuals_out.deliver(client_for(bot), "town", "root1", visual_run.pk) == ["image", "image"]
    posts = fake_mattermost.answers("town")
    assert [p["root_id"] for p in posts] == ["root1", "root1"]
    uploads = [fake_mattermost.uploads[p["file_ids"][0]] for p in posts]
    assert [u["name"] for u in uploads] == ["order-flow.png", "blue-box-2.png"]
    assert all(u["mime"] == "image/png" and u["bytes"].startswith(PNG_MAGIC) for u in uploads)


@pytest.mark.django_db
def test_without_a_renderer_each_visual_is_named_with_its_console_link(visual_run, org, builder, fake_telegram,
                                                                       monkeypatch):
    bot = telegram_bot(org, builder, fake_telegram)
    monkeypatch.setattr(visuals_out, "CHROMIUM", "/nonexistent/chromium")
    assert visuals_out.deliver(client_for(bot), "-100", "55", visual_run.pk) == ["link", "link"]
    url = run_url(visual_run.pk)
    assert [m["text"] for m in fake_telegram.sent("-100")] == [
        f"Order flow — drawn in the conversation: {url}", f"Blue box — drawn in the conversation: {url}"]
    assert fake_telegram.media == []


@pytest.mark.django_db
def test_more_than_three_visuals_post_three_and_name_the_rest(visual_run, org, builder, fake_telegram, monkeypatch):
    for i in range(3):
        drawn(visual_run, f"x{i}", f"Extra {i}", BLUE_BOX)
    monkeypatch.setattr(visuals_out, "render_pngs", lambda shown: [b"\x89PNG\r\n\x1a\nfake"] * len(shown))
    bot = telegram_bot(org, builder, fake_telegram)
    assert visuals_out.deliver(client_for(bot), "-100", "55", visual_run.pk) == ["image"] * 3
    assert [m["text"] for m in fake_telegram.sent("-100")] == [
        f"2 more drawings are in the conversation: Extra 1, Extra 2 — {run_url(visual_run.pk)}"]


@pytest.mark.django_db
def test_a_run_without_visuals_posts_nothing(org, builder, visuals_agent, fake_telegram):
    run = Run.objects.create(organization=org, agent=visuals_agent, version=visuals_agent.versions.first(),
                             user=builder, surface="telegram", status="completed")
    bot = telegram_bot(org, builder, fake_telegram)
    assert visuals_out.deliver(client_for(bot), "-100", "55", run.pk) == []
    assert fake_telegram.sent("-100") == [] and fake_telegram.media == []


# ------------------------------------------------------------------ end to end on Slack


def draw_then_answer_model(*draws: dict) -> FunctionModel:
    async def stream(messages, info: AgentInfo):
        if any(isinstance(p, ToolReturnPart) for p in getattr(messages[-1], "parts", [])):
            yield "Here is how it flows."
            return
        for i, args in enumerate(draws):
            yield {i: DeltaToolCall(name="draw", json_args=json.dumps(args), tool_call_id=f"call-{i}")}

    return FunctionModel(stream_function=stream, model_name="scripted")


@needs_chromium
def test_a_visual_drawn_on_slack_is_uploaded_as_a_png_in_the_answer_thread(celery_worker, scripted_model, client, org,
                                                                          builder, visuals_agent, fake_slack):
    bot = slack_bot(org, builder, fake=fake_slack)
    bind(visuals_agent, bot, builder, org)
    sender = SlackEventSender(client, str(bot.pk), "8f742231b10e8888abcd99yyyzzz85a5")
    scripted_model(draw_then_answer_model({"kind": "svg", "title": "Blue box", "content": BLUE_BOX}))
    event = sender.message("<@UBOT> draw the box", channel="C1")
    assert sender.send(event).status_code == 200
    wait_until(lambda: fake_slack.called("files.completeUploadExternal"), timeout=60)
    complete = fake_slack.called("files.completeUploadExternal")[0]
    assert complete["channel_id"] == "C1" and complete["thread_ts"] == event["ts"]
    assert fake_slack.called("files.getUploadURLExternal")[0]["filename"] == "blue-box.png"
    assert len(fake_slack.uploads) == 1
    assert rgb(fake_slack.uploads[0]["bytes"], 20, 20) == (0x2F, 0x6F, 0xDE)
    assert [p.final for p in fake_slack.answers("C1")] == ["Here is how it flows."]  # no link: the image went
    assert ToolCall.objects.get(tool_name="draw").run.surface == "slack"


def test_without_the_files_scope_slack_gets_the_visual_s_title_and_link(celery_worker, scripted_model, client, org,
                                                                       builder, visuals_agent, fake_slack):
    fake_slack.upload_error = "missing_scope"
    bot = slack_bot(org, builder, fake=fake_slack)
    bind(visuals_agent, bot, builder, org)
    sender = SlackEventSender(client, str(bot.pk), "8f742231b10e8888abcd99yyyzzz85a5")
    scripted_model(draw_then_answer_model({"kind": "mermaid", "title": "Order flow", "content": FLOW}))
    event = sender.message("<@UBOT> draw the order flow", channel="C1")
    sender.send(event)
    named = wait_until(lambda: next((p for p in fake_slack.answers("C1") if "drawn in the conversation" in p.final),
                                    None), timeout=60)
    run = Run.objects.get()
    assert named.thread_ts == event["ts"]
    assert named.final == f"Order flow — drawn in the conversation: {run_url(run.pk)}"
    assert fake_slack.uploads == []
    assert run.status == "completed"


def test_the_renderer_prefers_the_headless_shell_and_an_operator_can_name_another():
    shell = {visuals_out.HEADLESS_SHELL}
    assert visuals_out.chromium_path({}, shell.__contains__) == "/usr/bin/chromium-headless-shell"
    assert visuals_out.chromium_path({}, lambda path: False) == "/usr/bin/chromium"
    named = {"AGENTICOS_CHROMIUM": "/opt/chrome/chrome"}
    assert visuals_out.chromium_path(named, shell.__contains__) == "/opt/chrome/chrome"

"""One turn renderer on three surfaces, in Debian's chromium against one daphne serving the console, the embeds
and /static/: the same turns — a chart turn, a table turn (with highlighted code), a tool-step turn — read the
same (the DOM text of each assistant turn) in web chat, in the website widget on a customer's site and on the
hosted page, live and reopened.
The test plays the runner: the run is created by the real socket, never executed (`enqueue_run` is a no-op in
this daphne), and the test publishes the runner's frames into the run's group and writes the rows the runner
writes — so every surface receives exactly the same frames through its own socket and filter."""

from __future__ import annotations

import json
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from tests.browser_servers import lent_chromium

CHROMIUM = Path("/usr/bin/chromium")
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
PASSWORD = "pw-correct-horse-9"
TIMEOUT = 30_000

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(not CHROMIUM.exists(), reason="Debian chromium is not installed at /usr/bin/chromium"),
]


def __getattr__(name: str):
    """`application` for this test's daphne (daphne imports it from here): the console's live app, whose runs
    are recorded and never executed — the test is the runner."""
    if name != "application":
        raise AttributeError(name)
    import importlib

    live = importlib.import_module("tests.console.live_asgi")  # first: it sets Django up
    runs = importlib.import_module("agents.runs")
    runs.enqueue_run = lambda run_id: None
    return live.application


CHART = {"kind": "chart", "chart_type": "bar", "title": "Sales", "x_values": ["Q1", "Q2"],
         "series": [{"name": "EU", "values": [3, 5]}]}
TABLE = ("Sales by region:\n\n| Region | Sales |\n|---|---|\n| EU | 3 |\n| US | 5 |\n\n"
         "```python\ntotal = sum([3, 5])\n```")
TURNS = [
    {"prompt": "Chart my sales", "before": "Here is the chart.", "after": "Sales grew in Q2.",
     "tool": ("create_chart", {"title": "Sales"}, CHART)},
    {"prompt": "A table please", "before": TABLE},
    {"prompt": "Where is order 42?", "before": "Let me check.", "after": "Order 42 has shipped.",
     "tool": ("lookup_order", {"order": 42}, {"status": "shipped", "carrier": "DHL"})},
]

BODIES_JS = """(root) => Array.from((root || document).querySelectorAll('.turn-assistant .turn-body'))
  .map(b => b.textContent.replace(/\\s+/g, ' ').trim())"""
WIDGET_ROOT = "document.querySelector('[data-agenticos-widget]').shadowRoot"


# ------------------------------------------------------------------ the runner, played by the test


def publish(run_id, frames: list[dict]) -> None:
    """Into the run's group, as agents.runner.frames.ChannelLayerSink does (a thread: Playwright's loop runs here)."""
    from asgiref.sync import async_to_sync
    from channels.layers import get_channel_layer

    from agents.run_handle import group_name

    def send():
        async_to_sync(get_channel_layer().group_send)(group_name(run_id), {"type": "run.frames", "frames": frames,
                                                                           "run_id": str(run_id)})

    with ThreadPoolExecutor(1) as pool:
        pool.submit(send).result()


def frame(kind: str, **data) -> dict:
    return {"type": kind, "data": data}


def turn_frames(spec: dict, call_id: str) -> tuple[list[dict], list[dict]]:
    """(frames up to the tool call's answer, frames after it) of one turn, as the runner streams them."""
    first = [frame("model_request_start"), frame("part_start", index=0, part_type="text"),
             frame("text_delta", index=0, content=spec["before"])]
    if "tool" not in spec:
        return first, [frame("final_result", output=spec["before"])]
    name, args, result = spec["tool"]
    first += [frame("part_start", index=1, part_type="tool-call"), frame("call_tools_start"),
              frame("tool_call", tool_call_id=call_id, tool_name=name, args=args),
              frame("tool_result", tool_call_id=call_id, content=result, ok=True)]
    second = [frame("model_request_start"), frame("part_start", index=0, part_type="text"),
              frame("text_delta", index=0, content=spec["after"]), frame("final_result", output=spec["after"])]
    return first, second


LOST = "Half an answer whose worker died"


def lost_and_resumed(run, spec: dict, call_id: str) -> list[dict]:
    """The worker streaming the answer after the tool step is lost; another goes on from the step's checkpoint
    (agents/runner/recovery.py): a `resumed` frame with the turn as the checkpoint left it, then the answer is
    streamed again. Every surface drops the lost half and keeps the step it drew."""
    return [frame("model_request_start"), frame("part_start", index=0, part_type="text"),
            frame("text_delta", index=0, content=LOST),
            frame("resumed", run_id=str(run.pk), from_step=1,
                  parts=[{"type": "text", "text": spec["before"]}, {"type": "tool", "tool_call_id": call_id}])]


def record(run, spec: dict, call_id: str) -> None:
    """The rows the runner writes for the turn: its assistant message with parts, its call, its outcome."""
    from agents.models import Message, Run, ToolCall

    parts = [{"type": "text", "text": spec["before"]}]
    content = spec["before"]
    if "tool" in spec:
        parts += [{"type": "tool", "tool_call_id": call_id}, {"type": "text", "text": spec["after"]}]
        content += spec["after"]
    message = Message.objects.create(conversation_id=run.conversation_id, run=run, version_id=run.version_id,
                                     role="assistant", author_label=run.agent.name, content=content, parts=parts)
    if "tool" in spec:
        name, args, result = spec["tool"]
        ToolCall.objects.create(run=run, message=message, tool_call_id=call_id, tool_name=name, args=args,
                                result=result, status="ok")
    Run.objects.filter(pk=run.pk).update(status="completed", input_tokens=10, output_tokens=5,
                                          context_tokens=3_200, context_window=128_000)


def new_run(seen: set, **filters):
    from agents.models import Run

    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        run = Run.objects.filter(**filters).exclude(pk__in=seen).select_related("agent").first()
        if run is not None:
            seen.add(run.pk)
            return run
        time.sleep(0.1)
    raise AssertionError("no run was started")


def play(send, answered, *, started=None, on_tool_result=None, **filters) -> None:
    """Send each turn's prompt through the page, be the runner of the run it started, and wait until the page
    drew the turn as finished (`answered(n)`) before the next one."""
    seen: set = set()
    for i, spec in enumerate(TURNS):
        send(spec["prompt"])
        run = new_run(seen, **filters)
        call_id = f"call_{run.pk.hex[:8]}_{i}"
        if started:
            started(run)
        first, second = turn_frames(spec, call_id)
        publish(run.pk, first)
        if on_tool_result and "tool" in spec:
            on_tool_result(run)
        if "tool" in spec:
            publish(run.pk, lost_and_resumed(run, spec, call_id))
        publish(run.pk, second)
        record(run, spec, call_id)
        publish(run.pk, [frame("complete", status="completed",
                               usage={"input_tokens": 10, "output_tokens": 5, "cost_usd": "0.0001",
                                      "context_tokens": 3_200, "context_window": 128_000})])
        answered(i + 1)


# ------------------------------------------------------------------ servers and browser


def _media_root(settings) -> str:
    return str(settings.DATA_DIR / "media-test-embeds")  # what tests/embeds/conftest.py gives every test


@pytest.fixture(scope="module")
def _renderer_daphne(django_db_setup, django_db_blocker):
    """One daphne for the module's tests (it was one per test, 10–20 s of each test's setup under load). What it
    keeps between tests is what the embeds' session daphne keeps: the database (emptied after each test), Redis
    (flushed before each) and its environment, the same for every test here."""
    from django.conf import settings
    from django.db import connection

    from tests.fakes.live_daphne import serving_daphne

    with django_db_blocker.unblock():
        database = connection.settings_dict["NAME"]
    # The files a test stores are the ones the server serves.
    env = {"CONSOLE_LIVE_DATABASE": database, "MEDIA_ROOT": _media_root(settings)}
    with serving_daphne(f"{__name__}:application", "renderer", env=env, frontend_is_self=True) as base:
        yield base


@pytest.fixture
def server(_renderer_daphne, transactional_db, monkeypatch, settings):
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")  # ORM calls beside Playwright's loop
    assert settings.MEDIA_ROOT == _media_root(settings), "the module's daphne serves another MEDIA_ROOT"
    return _renderer_daphne


@pytest.fixture
def customer_site():
    """A customer's own site on another origin, serving the page the test puts in `pages`."""
    pages: dict[str, str] = {}

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 — http.server's spelling
            body = pages.get(self.path.split("?")[0])
            self.send_response(200 if body else 404)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.end_headers()
            self.wfile.write((body or "not found").encode())

        def log_message(self, *args):
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield httpd.server_address[1], pages
    httpd.shutdown()


@contextmanager
def chromium():
    """The process's Chromium (tests/browser_servers.py), lent for the block: each test gets it with no context of
    an earlier test's, as with a browser of its own; launching one per test was seconds of each."""
    ARTIFACTS.mkdir(exist_ok=True)
    with lent_chromium() as instance:
        yield instance


def watched(page) -> list[str]:
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("response", lambda r: errors.append(f"{r.status} {r.url}") if r.status >= 400 else None)
    page.set_default_timeout(TIMEOUT)
    return errors


# ------------------------------------------------------------------ the surfaces


def web_chat(browser, base, agent) -> tuple[list[str], list[str]]:
    from agents.models import Conversation

    page = browser.new_page(viewport={"width": 1280, "height": 900})
    errors = watched(page)
    page.goto(f"{base}/login/")
    page.get_by_label("Email").fill("owner@example.com")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(f"{base}/")
    page.goto(f"{base}/chat/?agent={agent.pk}")

    def send(text):
        page.get_by_label("Message").fill(text)
        page.get_by_role("button", name="Send").click()

    def summarizing(run):
        # Compaction gave up (the overhead alone passes the trigger): a notice with the pair someone needs to fix
        # the setting, until a real summary displaces it.
        publish(run.pk, [frame("compaction", status="gave_up", overhead_tokens=4_210, trigger_tokens=3_600,
                               window_tokens=4_000)])
        page.wait_for_selector("[data-compaction-gave-up]")
        notice = page.locator("[data-compaction-gave-up]").text_content()
        assert "4,210 tokens" in notice and "3,600 tokens" in notice and "4,000-token window" in notice
        # Compaction's frame: "Summarizing…" until the next frame of the run.
        publish(run.pk, [frame("compaction", status="summarizing", messages=12)])
        page.wait_for_selector("[data-compaction]")
        assert page.locator("[data-compaction]").text_content() == "Summarizing the conversation…"
        assert page.locator("[data-compaction-gave-up]").count() == 0

    def answered(n):
        # Finished and read back from the stored transcript (the live turn is replaced by it).
        page.wait_for_function(f"() => document.querySelectorAll('.turn-assistant[aria-busy=false] .turn-usage')"
                               f".length === {n}")
        if n == 1:  # the finished first turn's node: later frames must not draw it again
            page.evaluate("() => { document.querySelector('.turn-assistant').__first = true; }")

    def started(run):
        # The socket said run_started (it does once the row is written): the frames that follow are this turn's.
        page.wait_for_selector(f".turn-assistant[data-run-id='{run.pk}']", state="attached")

    play(send, answered, started=started, on_tool_result=summarizing, agent=agent, surface="web")
    assert page.locator("[data-compaction]").count() == 0  # gone with the next frame
    # The usage strip says how full the model's window was at the last request.
    assert page.locator("[data-context-fill]").text_content() == "Context 3% of 128,000 tokens"
    # Keyed updates: two more turns streamed word by word and the first turn's node is still the same node.
    assert page.evaluate("() => document.querySelector('.turn-assistant').__first === true")
    live = page.evaluate(BODIES_JS)
    conversation = Conversation.objects.get(agent=agent, surface="web")
    page.goto(f"{base}/chat/{conversation.pk}/")
    page.wait_for_function(f"() => document.querySelectorAll('.turn-assistant').length === {len(TURNS)}")
    reopened = page.evaluate(BODIES_JS)
    page.screenshot(path=str(ARTIFACTS / "turn-renderer-web-chat.png"), full_page=True)
    assert errors == []
    return live, reopened


def hosted_page(browser, base, embed) -> tuple[list[str], list[str]]:
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    errors = watched(page)
    page.goto(f"{base}/e/{embed.public_key}")
    page.wait_for_function("() => !document.getElementById('send').disabled")

    def send(text):
        page.wait_for_function("() => !document.getElementById('send').disabled")
        page.locator("#input").fill(text)
        page.locator("#send").click()

    def answered(n):
        page.wait_for_function(f"() => document.querySelectorAll('.turn-assistant[aria-busy=false]').length === {n}")

    play(send, answered, conversation__surface="embed", embed_id=embed.pk)
    live = page.evaluate(BODIES_JS)
    page.screenshot(path=str(ARTIFACTS / "turn-renderer-hosted-page.png"), full_page=True)
    page.reload()
    page.wait_for_function(f"() => document.querySelectorAll('.turn-assistant').length === {len(TURNS)}")
    reopened = page.evaluate(BODIES_JS)
    assert errors == []
    return live, reopened


def widget(browser, site_port, embed) -> tuple[list[str], list[str]]:
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    errors = watched(page)
    page.goto(f"http://localhost:{site_port}/")
    page.get_by_role("button", name="Need help?").click()

    def send(text):
        box = page.locator("[data-agenticos-widget] textarea")
        box.fill(text)
        box.press("Enter")

    def answered(n):
        page.wait_for_function(f"() => {WIDGET_ROOT}.querySelectorAll('.turn-assistant[aria-busy=false]').length === {n}")

    play(send, answered, conversation__surface="embed", embed_id=embed.pk)
    live = page.evaluate(f"() => ({BODIES_JS})({WIDGET_ROOT})")
    # The shop's own global is as the shop left it: the widget keeps the libraries it loaded to itself.
    assert page.evaluate("() => [window.marked, typeof window.AgenticTurn]") == ["the shop's own", "undefined"]
    page.screenshot(path=str(ARTIFACTS / "turn-renderer-widget.png"))
    # Reopened: the shop's page again, the same browser, so the same continuity key — the thread comes back.
    page.reload()
    page.get_by_role("button", name="Need help?").click()
    page.wait_for_function(f"() => {WIDGET_ROOT}.querySelectorAll('.turn-assistant').length === {len(TURNS)}")
    reopened = page.evaluate(f"() => ({BODIES_JS})({WIDGET_ROOT})")
    assert errors == []
    return live, reopened


def test_the_same_turns_read_the_same_on_web_chat_the_widget_and_the_hosted_page(server, customer_site):
    from agenticos.models import Membership
    from tests import factories

    port, pages = customer_site
    org = factories.organization(name="Acme")
    owner = factories.user(email="owner@example.com", password=PASSWORD)
    Membership.objects.create(organization=org, user=owner, role="owner")
    agent = factories.published_agent(org, owner, name="Shop Helper")
    page_embed = factories.embed(agent, kind="page", created_by=owner, show_tool_steps=True, show_tool_results=True)
    widget_embed = factories.embed(agent, kind="widget", created_by=owner, show_tool_steps=True,
                                   show_tool_results=True, allowed_origins=[f"http://localhost:{port}"],
                                   launcher_text="Need help?")
    pages["/"] = (f'<!doctype html><html><head><title>Acme shop</title><link rel="icon" href="data:,"><script>window.marked = "the shop\'s own";'
                  f'</script></head><body><h1>Acme shop</h1><script src="{server}/api/v1/embed/'
                  f'{widget_embed.public_key}/widget.js" async></script></body></html>')

    with chromium() as browser:
        chat_live, chat_reopened = web_chat(browser, server, agent)
        page_live, page_reopened = hosted_page(browser, server, page_embed)
        widget_live, widget_reopened = widget(browser, port, widget_embed)

    assert len(chat_live) == len(TURNS)
    assert not any(LOST in body for body in chat_live + page_live + widget_live)
    chart, table, tool = chat_live
    assert chart.startswith("Here is the chart. Drew a chart: Sales") and chart.endswith("Sales grew in Q2.")
    assert "Region Sales EU 3 US 5" in table and "Copy" in table
    assert tool.startswith("Let me check. Ran lookup order") and '"carrier": "DHL"' in tool
    assert chat_reopened == chat_live
    assert page_live == chat_live
    assert widget_live == chat_live
    # Reopened, both replay the transcript's parts for a visitor (embeds.services.history_messages): the chart,
    # the table and the tool step read as web chat reads them live.
    assert page_reopened == chat_live
    assert widget_reopened == chat_live
    print(json.dumps({"chat": chat_live, "page_reopened": page_reopened}, indent=1))


def test_a_generated_image_shows_on_the_hosted_page_through_the_pages_own_route(server):
    import base64

    from agenticos.models import Membership
    from agents.models import Message
    from embeds import services
    from media import store
    from tests import factories

    png = base64.b64decode("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGP4z8DwHwAFAAH/iZk9HQAAAABJRU5ErkJggg==")
    org = factories.organization(name="Acme")
    owner = factories.user(email="owner@example.com", password=PASSWORD)
    Membership.objects.create(organization=org, user=owner, role="owner")
    agent = factories.published_agent(org, owner, name="Painter")
    embed = factories.embed(agent, kind="page", created_by=owner)
    visitor = "ab" * 16
    conversation = services.create_conversation(embed, visitor)
    image = store.save(organization_id=org.pk, run_id=None, conversation_id=conversation.pk, kind="image", data=png,
                       media_type="image/png", name="sunset")
    text = f"Here it is: [sunset.png](/api/v1/generated/{image.filename})"
    Message.objects.create(conversation=conversation, role="user", content="Paint a sunset")
    Message.objects.create(conversation=conversation, role="assistant", content=text,
                           parts=[{"type": "text", "text": text}])

    with chromium() as browser:
        page = browser.new_page()
        errors = watched(page)
        page.add_init_script(f"localStorage.setItem('agenticos-visitor:{embed.public_key}', '{visitor}')")
        page.goto(f"{server}/e/{embed.public_key}")
        img = page.locator("figure[data-generated=image] img")
        img.wait_for()
        own_route = f"/api/v1/embed/{embed.public_key}/generated/{image.filename}?media="
        # A visitor has no session: the member route would refuse them, so the file comes through the page's own,
        # opened by the socket's media token — the continuity key is never in a URL (URLs reach access logs).
        src = img.get_attribute("src")
        assert src.startswith(own_route) and len(src) > len(own_route) and visitor not in src
        page.wait_for_function("() => document.querySelector('figure[data-generated=image] img').naturalWidth === 1")
        assert page.get_by_role("link", name="Download").get_attribute("href") == src + "&download=1"
        page.screenshot(path=str(ARTIFACTS / "turn-renderer-hosted-page-image.png"))
        assert errors == []


def test_a_visitors_files_show_on_their_own_turn_live_and_reopened(server, tmp_path):
    """The hosted page names the files a visitor sent above their message, when they send it and when the thread
    is replayed (`history`, name/type/size only)."""
    import base64

    from agenticos.models import Membership
    from agents.models import Message
    from tests import factories

    org = factories.organization(name="Acme")
    owner = factories.user(email="owner@example.com", password=PASSWORD)
    Membership.objects.create(organization=org, user=owner, role="owner")
    agent = factories.published_agent(org, owner, name="Reader")
    embed = factories.embed(agent, kind="page", created_by=owner, allow_uploads=True)
    receipt = tmp_path / "receipt.png"
    receipt.write_bytes(base64.b64decode(
        "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGP4z8DwHwAFAAH/iZk9HQAAAABJRU5ErkJggg=="))
    files_js = "() => Array.from(document.querySelectorAll('.turn-user [data-message-files] li')).map(l => l.textContent)"

    with chromium() as browser:
        page = browser.new_page()
        errors = watched(page)
        page.goto(f"{server}/e/{embed.public_key}")
        page.wait_for_function("() => !document.getElementById('send').disabled")
        page.set_input_files("#file", str(receipt))
        page.wait_for_function("() => document.getElementById('files').textContent === 'receipt.png'")
        page.get_by_label("Message").fill("What does this receipt say?")
        page.get_by_role("button", name="Send").click()
        page.wait_for_selector(".turn-user [data-message-files]")
        assert page.evaluate(files_js) == ["receipt.png"]
        assert page.locator(".turn-user .content").text_content() == "What does this receipt say?"

        sent = Message.objects.filter(run__embed_id=embed.pk, role="user")
        for _ in range(300):  # the socket writes the turn after the page drew it
            if sent.exists():
                break
            page.wait_for_timeout(100)
        assert [f["name"] for f in sent.get().attachments] == ["receipt.png"]
        page.reload()  # the thread replayed from the server
        page.wait_for_selector(".turn-user [data-message-files]")
        assert page.evaluate(files_js) == ["receipt.png"]
        page.screenshot(path=str(ARTIFACTS / "hosted-page-visitor-files.png"))
        assert errors == []

"""Drawings on every surface, in Debian's chromium against one daphne serving the console and the embeds
(the test plays the runner, as tests/embeds/test_turn_renderer_surfaces.py does: the run is created by the real
socket, never executed, and the test publishes the runner's frames into the run's group).

- Web chat: a `draw` call's frame appears under the message while its arguments stream, the SVG growing in the same
  frame delta by delta, with no script and no on* handler until the call is complete — then the drawing runs once.
- The hosted page (arguments shown) grows the same drawing through its own socket and filter, and draws it again
  reopened.
- The widget on a shop's site (arguments and results hidden, the default) grows the same drawing from what
  embeds/frames.py lets through — its kind and markup alone — and draws it again reopened, with the deployment's
  library bundle named by its own origin.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from capabilities.visuals import reports
from tests.embeds.test_turn_renderer_surfaces import (  # noqa: F401 (fixtures)
    PASSWORD,
    TIMEOUT,
    _renderer_daphne,
    chromium,
    customer_site,
    frame,
    new_run,
    publish,
    server,
    watched,
)

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(not Path("/usr/bin/chromium").exists(), reason="Debian chromium is not installed"),
]

RECTS = [f'<rect x="{10 + 40 * i}" y="10" width="30" height="30" fill="#4f46e5"/>' for i in range(4)]
# A script and a handler at the very start: present in every partial drawing, so any of them running early shows.
CONTENT = ('<svg xmlns="http://www.w3.org/2000/svg" width="180" height="50">'
           '<script>document.documentElement.setAttribute("data-script", "ran")</script>'
           '<rect id="h" width="1" height="1" onclick="1"/>'
           # A relative load from the bundle, as the tool tells the model to write it.
           '<image href="/apps/lib/leaflet.css" width="1" height="1"/>' + "".join(RECTS) + "</svg>")
ARGS = {"kind": "svg", "title": "Four steps", "content": CONTENT}
RESULT = {"kind": "visual", "visual_id": "", "visual_kind": "svg", "title": "Four steps", "images": {},
          "checked": False, "errors": [], "message": "Drawn; not checked."}

# Web chat's half of the streaming drawing (console/static/console/chat.js is not this helper's file): the patch described
# in the report, applied to the served chat.js until the file carries it — then this serves the file as it is.
CHAT_HOOK = "AgenticTurn.drawings()"
CHAT_PATCH = [
    ("  var liveViews = {};",
     "  var drawing = window.AgenticTurn.drawings(); // a drawing's call grows while its arguments stream (turn.js)\n"
     "  var liveViews = {};"),
    ('    if (frame.type !== "compaction") turns.forEach(',
     '    if (frame.type === "part_start" || frame.type === "tool_call_delta" || frame.type === "tool_call") {\n'
     "      drawing.apply(liveTurn().parts, frame);\n"
     "    }\n"
     '    if (frame.type !== "compaction") turns.forEach('),
]


def served_chat_js() -> str | None:
    static = Path(__file__).resolve().parents[2] / "console" / "static" / "console"
    source = (static / "chat.js").read_text()
    # Web chat's fold of frames lives in chat/stream.js since chat.js was split by responsibility.
    if CHAT_HOOK in source or CHAT_HOOK in (static / "chat" / "stream.js").read_text():
        return None
    for old, new in CHAT_PATCH:
        assert source.count(old) == 1, old
        source = source.replace(old, new)
    return source


def chunks(call_id: str) -> list[str]:
    """The arguments as a model streams them: cut after the script, then after each rect."""
    text = json.dumps(ARGS)
    cuts = [text.index("onclick")] + [text.index(r.replace('"', '\\"')) + len(r.replace('"', '\\"')) for r in RECTS]
    return [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)], strict=True)]


def record(run, call_id: str, *, text: str = "Here it is.") -> None:
    from agents.models import Message, Run, ToolCall

    message = Message.objects.create(conversation_id=run.conversation_id, run=run, version_id=run.version_id,
                                     role="assistant", author_label=run.agent.name, content=text,
                                     parts=[{"type": "tool", "tool_call_id": call_id}, {"type": "text", "text": text}])
    ToolCall.objects.create(run=run, message=message, tool_call_id=call_id, tool_name="draw", args=ARGS,
                            result={**RESULT, "visual_id": call_id}, status="ok")
    Run.objects.filter(pk=run.pk).update(status="completed", input_tokens=10, output_tokens=5)


def frame_state(page, host: str = "") -> dict:
    """What the drawing's frame shows: its rects, whether its script or handler ran or is even there."""
    f = page.frame_locator(f"{host}[data-visual] iframe")
    return {"rects": f.locator("rect:not(#h)").count(), "scripts": f.locator("body script").count(),
            "handlers": f.locator("[onclick]").count(),
            "ran": f.locator("html").get_attribute("data-script")}


def grow(page, run, call_id: str, *, host: str = "", complete=None) -> None:
    """Be the runner of one drawing turn, checking the frame after every delta."""
    publish(run.pk, [frame("model_request_start"),
                     frame("part_start", index=0, part_type="tool-call", tool_name="draw", tool_call_id=call_id)])
    for n, piece in enumerate(chunks(call_id)):
        publish(run.pk, [frame("tool_call_delta", index=0, args_delta=piece)])
        if not 1 <= n <= len(RECTS):  # the cut before the first rect, and the closing tail
            continue
        # The SVG grows in the frame it started in, delta by delta, and nothing the model wrote runs.
        page.frame_locator(f"{host}[data-visual] iframe").locator("rect:not(#h)").nth(n - 1).wait_for(state="attached")
        state = frame_state(page, host)
        assert state == {"rects": n, "scripts": 0, "handlers": 0, "ran": None}, (n, state)
        if n == 1:
            page.evaluate(f"() => {{ {root_js(host)}.querySelector('[data-visual] iframe').__first = true; }}")
        assert page.evaluate(f"() => {root_js(host)}.querySelector('[data-visual] iframe').__first === true")
    def call() -> None:
        publish(run.pk, [frame("call_tools_start"), frame("tool_call", tool_call_id=call_id, tool_name="draw",
                                                           args=ARGS)])

    # The call is complete; as `draw` does, its result comes after the drawing ran (and, watched, reported).
    if complete:
        complete(call)
    else:
        call()
    publish(run.pk, [frame("tool_result", tool_call_id=call_id, content={**RESULT, "visual_id": call_id}, ok=True),
                     frame("model_request_start"), frame("part_start", index=0, part_type="text"),
                     frame("text_delta", index=0, content="Here it is."), frame("final_result", output="Here it is.")])
    record(run, call_id)
    publish(run.pk, [frame("complete", status="completed",
                           usage={"input_tokens": 10, "output_tokens": 5, "cost_usd": "0.0001"})])


def root_js(host: str) -> str:
    return "document.querySelector('[data-agenticos-widget]').shadowRoot" if host else "document"


def finished(page, host: str = "") -> dict:
    # Complete: the drawing ran once, script and handler in place.
    page.frame_locator(f"{host}[data-visual] iframe").locator("html[data-script=ran]").wait_for(state="attached")
    return frame_state(page, host)


def settled(page, host: str = "", tries: int = 40) -> dict:
    """The finished drawing's state once two reads a quarter second apart agree (at most ~10 s)."""
    last = None
    for _ in range(tries):
        now = finished(page, host)
        if now == last:
            return now
        last = now
        page.wait_for_timeout(250)
    return last or {}


def owner_and_agent():
    from agenticos.models import Membership
    from tests import factories

    org = factories.organization(name="Acme")
    owner = factories.user(email="owner@example.com", password=PASSWORD)
    Membership.objects.create(organization=org, user=owner, role="owner")
    return owner, factories.published_agent(org, owner, name="Explainer", capabilities=[{"id": "visuals"}])


def test_a_drawing_grows_in_web_chat_while_its_arguments_stream_and_runs_only_once_complete(server):
    owner, agent = owner_and_agent()
    with chromium() as browser:
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        errors = watched(page)
        patched = served_chat_js()
        if patched is not None:
            page.route("**/static/console/chat.js*", lambda route: route.fulfill(
                status=200, content_type="application/javascript", body=patched))
        page.goto(f"{server}/login/")
        page.get_by_label("Email").fill("owner@example.com")
        page.get_by_label("Password").fill(PASSWORD)
        page.get_by_role("button", name="Sign in").click()
        page.wait_for_url(f"{server}/")
        page.goto(f"{server}/chat/?agent={agent.pk}")
        page.get_by_label("Message").fill("Draw the four steps")
        page.get_by_role("button", name="Send").click()
        run = new_run(set(), agent=agent, surface="web")
        page.wait_for_selector(f".turn-assistant[data-run-id='{run.pk}']", state="attached")
        call_id = f"call_{run.pk.hex[:8]}"
        def complete(call) -> None:
            # Web chat with its person watching: the finished drawing runs once and its report goes to `draw`.
            with page.expect_request(lambda r: r.url.endswith("/api/v1/visuals/reports")) as posted:
                call()
                assert finished(page) == {"rects": 4, "scripts": 1, "handlers": 1, "ran": "ran"}
            assert json.loads(posted.value.post_data or "{}")["digest"] == reports.digest("svg", CONTENT)

        grow(page, run, call_id, complete=complete)
        page.wait_for_function("() => document.querySelector('.turn-assistant .turn-usage')")
        # The turn's end may draw its rail once more (its signature gains the ended turn's state): read the
        # frame once it has settled — a frame being replaced reads as neither the old nor the new drawing.
        assert settled(page) == {"rects": 4, "scripts": 1, "handlers": 1, "ran": "ran"}
        assert page.locator("[data-visual] iframe").count() == 1
        page.screenshot(path=str(Path(__file__).resolve().parents[2] / "test-artifacts" / "visual-grown-web-chat.png"))
        assert errors == []


def test_the_hosted_page_grows_a_drawing_where_arguments_are_shown_and_draws_it_again_reopened(server):
    from tests import factories

    owner, agent = owner_and_agent()
    embed = factories.embed(agent, kind="page", created_by=owner, show_tool_steps=True, show_tool_results=True)
    with chromium() as browser:
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        errors = watched(page)
        reports = []
        page.on("request", lambda r: reports.append(r.url) if "/visuals/reports" in r.url else None)
        page.goto(f"{server}/e/{embed.public_key}")
        page.wait_for_function("() => !document.getElementById('send').disabled")
        page.locator("#input").fill("Draw the four steps")
        page.locator("#send").click()
        run = new_run(set(), conversation__surface="embed", embed_id=embed.pk)
        grow(page, run, f"call_{run.pk.hex[:8]}")
        assert finished(page) == {"rects": 4, "scripts": 1, "handlers": 1, "ran": "ran"}
        page.wait_for_function("() => document.querySelectorAll('.turn-assistant[aria-busy=false]').length === 1")
        page.reload()
        assert finished(page) == {"rects": 4, "scripts": 1, "handlers": 1, "ran": "ran"}
        assert page.locator("[data-visual] iframe").get_attribute("sandbox") == "allow-scripts"
        assert reports == []  # a visitor has no session to report with
        assert errors == []


def test_the_widget_grows_a_drawing_from_what_a_visitor_may_see_and_draws_it_again_reopened(server, customer_site):
    from tests import factories

    port, pages = customer_site
    owner, agent = owner_and_agent()
    embed = factories.embed(agent, kind="widget", created_by=owner, allowed_origins=[f"http://localhost:{port}"],
                            launcher_text="Need help?")  # the defaults: steps shown, arguments and results hidden
    pages["/"] = ('<!doctype html><html><head><title>Acme shop</title><link rel="icon" href="data:,"></head><body>'
                  f'<h1>Acme shop</h1><script src="{server}/api/v1/embed/{embed.public_key}/widget.js" async>'
                  "</script></body></html>")
    host = "[data-agenticos-widget] "
    with chromium() as browser:
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        errors = watched(page)
        lib_loads = []
        page.on("request", lambda r: lib_loads.append(r.url) if "/apps/lib/" in r.url else None)
        page.goto(f"http://localhost:{port}/")
        page.get_by_role("button", name="Need help?").click()
        box = page.locator("[data-agenticos-widget] textarea")
        box.fill("Draw the four steps")
        box.press("Enter")
        run = new_run(set(), conversation__surface="embed", embed_id=embed.pk)
        grow(page, run, f"call_{run.pk.hex[:8]}", host=host)
        assert finished(page, host) == {"rects": 4, "scripts": 1, "handlers": 1, "ran": "ran"}
        # The frame's library comes from the deployment, not the shop it sits on.
        assert lib_loads and all(u.startswith(f"{server}/apps/lib/") for u in lib_loads)
        assert f"{server}/apps/lib/leaflet.css" in lib_loads  # the drawing's own relative /apps/lib/ load
        assert page.evaluate("() => typeof window.AgenticVisuals") == "undefined"
        page.reload()
        page.get_by_role("button", name="Need help?").click()
        assert finished(page, host) == {"rects": 4, "scripts": 1, "handlers": 1, "ran": "ran"}
        assert errors == []


def test_a_mermaid_drawing_redraws_per_complete_line_while_it_streams(server):
    from tests import factories

    owner, agent = owner_and_agent()
    embed = factories.embed(agent, kind="page", created_by=owner)
    lines = ["flowchart LR\n", "  Order --> Pack\n", "  Pack --> Ship\n", "  Ship --> Deliv"]
    with chromium() as browser:
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        errors = watched(page)
        page.goto(f"{server}/e/{embed.public_key}")  # a page that carries the one renderer's visuals.js

        def stream(text: str, *, done: bool = False) -> None:
            args = json.dumps({"kind": "mermaid", "title": "Flow", "content": text})
            page.evaluate("""([args, done]) => {
              let box = document.getElementById('m');
              if (!box) { box = document.createElement('div'); box.id = 'm'; document.body.appendChild(box); }
              window.AgenticVisuals.render({tool_name: 'draw', tool_call_id: 'c1', streaming: !done,
                                            args: done ? JSON.parse(args) : args.slice(0, -2), result: {}}, box);
            }""", [args, done])

        nodes = page.frame_locator("#m iframe").locator("svg g.node")
        stream("".join(lines[:2]))
        nodes.nth(1).wait_for(state="attached")
        page.evaluate("() => { document.querySelector('#m iframe').__first = true; }")
        stream("".join(lines[:3]))
        nodes.nth(2).wait_for(state="attached")
        stream("".join(lines))  # a line still being written is not drawn
        stream("".join(lines) + "er")
        assert nodes.count() == 3
        assert page.evaluate("() => document.querySelector('#m iframe').__first === true")  # the same frame
        stream("".join(lines) + "ered\n", done=True)
        nodes.nth(3).wait_for(state="attached")
        assert errors == []


def test_a_growing_drawing_whose_turn_leaves_the_page_for_a_moment_takes_its_latest_markup_when_back(server):
    """A turn's rail is drawn again while a drawing grows (web chat redraws a turn whose signature changed): the
    frame is out of the page for a moment, with no window to post to. The delta that arrives then is not an error;
    the frame, back in the page, loads afresh and shows the latest markup."""
    from tests import factories

    owner, agent = owner_and_agent()
    embed = factories.embed(agent, kind="page", created_by=owner)
    with chromium() as browser:
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        errors = watched(page)
        page.goto(f"{server}/e/{embed.public_key}")  # a page that carries the one renderer's visuals.js

        def stream(rects: int) -> None:
            content = CONTENT.split("<rect x=")[0] + "".join(RECTS[:rects])
            args = json.dumps({"kind": "svg", "title": "Four steps", "content": content})
            page.evaluate("""(args) => {
              let box = window.__box;
              if (!box) { box = window.__box = document.createElement('div'); box.id = 'm'; document.body.appendChild(box); }
              window.AgenticVisuals.render({tool_name: 'draw', tool_call_id: 'c1', streaming: true,
                                            args: args.slice(0, -2), result: {}}, box);
            }""", args)

        rects = page.frame_locator("#m iframe").locator("rect:not(#h)")
        stream(1)
        rects.nth(0).wait_for(state="attached")
        stream(2)
        rects.nth(1).wait_for(state="attached")
        page.evaluate("() => window.__box.remove()")
        stream(3)  # out of the page: no window to post to
        page.evaluate("() => document.body.appendChild(window.__box)")
        rects.nth(2).wait_for(state="attached")
        stream(4)
        rects.nth(3).wait_for(state="attached")
        assert rects.count() == 4
        assert errors == []

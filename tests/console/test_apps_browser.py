"""Applications and visuals in a real browser (Debian chromium via Playwright) against daphne: the sandbox
holds — a page or a drawing that tries fetch() or the console's document gets neither — and the console's
report of what went wrong reaches `draw`, the way the model learns a drawing is broken."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor

import pytest

from agenticos.models import Membership
from capabilities.artifacts import services
from capabilities.visuals import reports
from tests import factories
from tests.capabilities.helpers import Outcome, Script, agent_for, deps, spec
from tests.console.conftest import ARTIFACTS
from tests.console.test_browser_chat import PASSWORD, TIMEOUT, sign_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# Tries everything a page must not do and writes what happened into its own body.
PROBE = """<!doctype html><h1>Probe</h1><pre id="out"></pre><script>
var out = document.getElementById('out');
function say(t) { out.textContent += t + '\\n'; }
try { say('parent: ' + parent.document.title); } catch (e) { say('parent blocked: ' + e.name); }
try { say('cookie: ' + document.cookie); } catch (e) { say('cookie blocked: ' + e.name); }
fetch('/api/v1/agents').then(function () { say('fetch: answered'); }, function (e) { say('fetch blocked: ' + e.name); });
</script>"""


def _person(org, email: str, role: str = "member"):
    person = factories.user(email=email, password=PASSWORD)
    Membership.objects.create(organization=org, user=person, role=role)
    return person


def _api_requests(page) -> list[str]:
    seen: list[str] = []
    page.on("request", lambda request: seen.append(request.url) if "/api/v1/agents" in request.url else None)
    return seen


def test_an_application_reaches_neither_the_network_nor_the_console(live_server_url, browser):
    org = factories.organization(name="Acme")
    person = _person(org, "publisher@example.com")
    agent = factories.published_agent(org, factories.member(org, "builder"), name="Reporter",
                                      capabilities=[{"id": "artifacts"}])
    artifact = services.publish(organization_id=org.pk, agent_id=agent.pk, environment="production", name="probe",
                                owner_id=person.pk, text=PROBE, fmt="html").artifact

    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.set_default_timeout(TIMEOUT)
    fetched = _api_requests(page)
    sign_in(page, live_server_url, "publisher@example.com", then=f"/apps/{artifact.pk}/")
    frame = page.frame_locator("[data-app-frame]")
    frame.locator("#out").filter(has_text="fetch blocked").wait_for()
    text = frame.locator("#out").inner_text()
    assert "parent blocked: SecurityError" in text and "cookie blocked: SecurityError" in text
    assert "fetch blocked: TypeError" in text and "answered" not in text
    page.screenshot(path=str(ARTIFACTS / "apps-detail-1280.png"), full_page=True)

    # Opened on its own at its link, the page is still an opaque origin without network.
    page.goto(f"{live_server_url}/apps/{artifact.pk}/raw")
    page.locator("#out").filter(has_text="fetch blocked").wait_for()
    alone = page.locator("#out").inner_text()
    assert "cookie blocked: SecurityError" in alone and "answered" not in alone
    assert fetched == []


DRAWING = ('<p id="shown">Compound interest</p><script>'
           'fetch("/api/v1/agents");'
           'document.getElementById("shown").dataset.parent = parent.document.title;'
           '</script>')


def _render(page, call: dict) -> None:
    page.evaluate("""(call) => {
      let box = document.getElementById('visual-under-test');
      if (!box) { box = document.createElement('div'); box.id = 'visual-under-test'; document.body.appendChild(box); }
      window.AgenticVisuals.render(call, box);
    }""", call)


def test_a_drawing_that_tries_the_network_and_the_console_is_reported_back_to_draw(live_server_url, browser,
                                                                                  settings):
    org = factories.organization(name="Acme")
    person = _person(org, "watcher@example.com")
    agent = factories.published_agent(org, factories.member(org, "builder"), name="Explainer",
                                      capabilities=[{"id": "visuals"}])
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.set_default_timeout(TIMEOUT)
    fetched = _api_requests(page)
    sign_in(page, live_server_url, "watcher@example.com", then="/apps/")
    page.add_script_tag(url=f"{live_server_url}/static/console/visuals.js")

    args = {"kind": "html", "title": "Interest", "content": DRAWING}
    # While the call streams the markup is shown inert: no script has run, so nothing is reported yet.
    _render(page, {"tool_name": "draw", "tool_call_id": "call-0", "streaming": True, "args": json.dumps(args)[:-20]})
    frame = page.frame_locator("#visual-under-test iframe")
    frame.locator("#shown").wait_for()
    assert frame.locator("script").count() == 0
    with page.expect_request(lambda r: r.url.endswith("/api/v1/visuals/reports")) as posted:
        _render(page, {"tool_name": "draw", "tool_call_id": "call-0", "args": args, "result": None})
    report = json.loads(posted.value.post_data or "{}")
    assert report["digest"] == reports.digest("html", DRAWING)
    assert any("refused by the sandbox: connect-src" in e for e in report["errors"]), report
    assert any("SecurityError" in e or "cross-origin" in e for e in report["errors"]), report
    page.locator("#visual-under-test [data-visual-errors] li").first.wait_for()
    assert fetched == []
    page.screenshot(path=str(ARTIFACTS / "visual-report-1280.png"), full_page=True)

    # The model's draw, in web chat with this person watching, answers with what the browser reported.
    # (On a thread of its own: Playwright's sync API holds this thread's event loop.)
    settings.VISUAL_REPORT_WAIT_SECONDS = 5
    run_deps = deps(organization_id=str(org.pk), agent_id=str(agent.pk), user_id=person.pk, surface="web",
                    can_ask_user=True)
    script = Script([("draw", args)])
    with ThreadPoolExecutor(max_workers=1) as pool:
        result = pool.submit(agent_for(spec({"id": "visuals"}), run_deps, script).run_sync, "go",
                             deps=run_deps).result()
    answer = Outcome(messages=result.all_messages(), script=script, output=result.output).returns[0]
    assert answer["checked"] is True and answer["errors"] == report["errors"]
    assert "revise_visual(visual_id='call-0'" in answer["message"]


def test_a_follow_up_from_a_drawing_is_sent_only_on_the_persons_click(live_server_url, browser):
    org = factories.organization(name="Acme")
    _person(org, "clicker@example.com")
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.set_default_timeout(TIMEOUT)
    sign_in(page, live_server_url, "clicker@example.com", then="/apps/")
    page.add_script_tag(url=f"{live_server_url}/static/console/visuals.js")
    page.evaluate("() => { window.sent = []; document.addEventListener('agenticos:follow-up', "
                  "e => window.sent.push(e.detail.text)); }")
    content = '<button id="plan" onclick="agenticos.followUp(\'Plan this stop\')">Plan</button>'
    _render(page, {"tool_name": "draw", "tool_call_id": "c1", "result": {"visual_id": "c1"},
                   "args": {"kind": "html", "title": "Stops", "content": content}})
    page.frame_locator("#visual-under-test iframe").locator("#plan").click()
    offer = page.locator("#visual-under-test [data-visual-follow-up]")
    offer.wait_for()
    assert "Plan this stop" in offer.inner_text()
    assert page.evaluate("() => window.sent") == []  # shown, not sent
    offer.get_by_role("button", name="Send").click()
    assert page.evaluate("() => window.sent") == ["Plan this stop"]


LIBRARY_DRAWINGS = {
    "mermaid": ("mermaid", "flowchart LR\n  Order --> Pack\n  Pack --> Ship\n", "svg"),
    "chart.js": ("html", '<canvas id="c" width="300" height="150"></canvas>'
                         '<script src="/apps/lib/chart.umd.min.js"></script>'
                         '<script>new Chart(document.getElementById("c"), {type: "bar", data: {labels: ["a", "b"], '
                         'datasets: [{data: [1, 2]}]}, options: {animation: false}});'
                         'document.body.dataset.ok = "chart";</script>', "[data-ok=chart]"),
    "three.js": ("html", '<script type="module">import * as THREE from "/apps/lib/three.module.min.js";'
                         'document.body.dataset.ok = "three-" + THREE.REVISION;</script>', "[data-ok=three-170]"),
    "leaflet": ("html", '<link rel="stylesheet" href="/apps/lib/leaflet.css"><div id="m" style="height:120px">'
                        '</div><script src="/apps/lib/leaflet.js"></script><script>var m = L.map("m", '
                        '{center: [52.2, 21], zoom: 5}); L.polyline([[52.2, 21], [50.06, 19.94]]).addTo(m);'
                        'document.body.dataset.ok = "leaflet";</script>', "[data-ok=leaflet]"),
}


@pytest.mark.parametrize("library", list(LIBRARY_DRAWINGS))
def test_a_drawing_loads_the_deployments_library_bundle_inside_the_sandbox(live_server_url, browser, library):
    kind, content, drawn = LIBRARY_DRAWINGS[library]
    org = factories.organization(name="Acme")
    _person(org, "drawer@example.com")
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.set_default_timeout(TIMEOUT)
    sign_in(page, live_server_url, "drawer@example.com", then="/apps/")
    page.add_script_tag(url=f"{live_server_url}/static/console/visuals.js")
    with page.expect_request(lambda r: r.url.endswith("/api/v1/visuals/reports")) as posted:
        _render(page, {"tool_name": "draw", "tool_call_id": "c1", "result": None,
                       "args": {"kind": kind, "title": library, "content": content}})
    assert json.loads(posted.value.post_data or "{}")["errors"] == []
    page.frame_locator("#visual-under-test iframe").locator(drawn).first.wait_for(state="attached")
